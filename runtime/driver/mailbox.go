package driver

import (
	"sync"
	"time"
)

// Mailbox carries an owner's inputs for a machine from any goroutine to the
// driver's goroutine: the committer's verdicts for an ingest connection,
// "there is more work" for a feed or a download connection. It replaces a
// goroutine per connection that waited for a kick and called Do.
//
// Put queues a function and Wake asks for a step without one; either posts
// one delivery to the attached Driver (Post) unless one is already posted
// and has not run. The delivery runs every function queued before it, in
// order, on the driver's goroutine, after which the driver writes the
// machine's output and calls step as after any input. Before Attach, and
// after Detach, inputs wait in the Mailbox for the next Attach.
//
// The zero Mailbox is ready to use; it must not be copied after first use.
type Mailbox struct {
	mu     sync.Mutex
	d      Driver
	inbox  []func(now time.Time)
	posted bool // a delivery is posted and has not run
	wanted bool // a delivery is wanted (inputs or Wake) while detached
}

// Put queues fn, which calls the machine's methods, for the driver's
// goroutine.
func (mb *Mailbox) Put(fn func(now time.Time)) {
	mb.mu.Lock()
	mb.inbox = append(mb.inbox, fn)
	mb.postLocked()
	mb.mu.Unlock()
}

// Wake asks the driver for a step (the owner has new work that step pulls,
// or a flag that step reads has changed).
func (mb *Mailbox) Wake() {
	mb.mu.Lock()
	mb.postLocked()
	mb.mu.Unlock()
}

// Attach starts delivering through d, the driver running the machine (for
// a Driver that holds Posts until its Run starts, before Run). Inputs that
// waited are delivered now.
func (mb *Mailbox) Attach(d Driver) {
	mb.mu.Lock()
	mb.d, mb.posted = d, false
	if mb.wanted || len(mb.inbox) > 0 {
		mb.postLocked()
	}
	mb.mu.Unlock()
}

// Detach stops delivering (the run ended); later inputs wait for the next
// Attach. Functions queued but not delivered are dropped: they were for
// the machine that ended.
func (mb *Mailbox) Detach() {
	mb.mu.Lock()
	mb.d, mb.inbox, mb.posted, mb.wanted = nil, nil, false, false
	mb.mu.Unlock()
}

// postLocked posts a delivery unless one is on its way. mu is held.
func (mb *Mailbox) postLocked() {
	if mb.d == nil {
		mb.wanted = true
		return
	}
	if mb.posted {
		return
	}
	d := mb.d
	mb.posted, mb.wanted = true, false
	if err := d.Post(func(now time.Time) { mb.deliver(d, now) }); err != nil {
		// The connection is closed: its run is ending, and Detach
		// follows. Post does not run fn itself, so mu may be held.
		mb.posted = false
	}
}

// deliver runs the queued functions on the driver's goroutine.
func (mb *Mailbox) deliver(d Driver, now time.Time) {
	mb.mu.Lock()
	if mb.d != d {
		mb.mu.Unlock()
		return // detached meanwhile: not for this run
	}
	fns := mb.inbox
	mb.inbox, mb.posted = nil, false
	mb.mu.Unlock()
	for _, fn := range fns {
		fn(now)
	}
}
