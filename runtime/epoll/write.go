//go:build linux

package epoll

// Output. After every input the loop collects the machine's output into the
// loop's scratch space (scratch) and writes it at once; only what the socket
// does not take is kept on the connection (outQueue.detach), until EPOLLOUT
// says it can take more. Meanwhile the machine gets no input, so the bytes
// of its segments stay valid (machine.SegmentSender) and are written from
// where the machine keeps them.
//
// Consecutive byte pieces go out in one writev, at most maxIovecs pieces
// or about maxGather bytes at a time: commands, articles of at most
// driver.CopyBody octets that a driver.BodyAppender copies into the
// loop's scratch space (where a driver.BodyCopier agrees) (as runtime/goroutine does: a window of CHECKs or
// TAKETHISes with their 2 KB articles is one system call, not one per
// piece; an article over driver.SmallBody ends its writev), and bodies
// from BodySource.Body. A larger stored article whose source is a
// FileBodySource goes out with sendfile(2) from its file at an explicit
// offset. Stored articles are fetched only when the writer reaches them,
// so a window full of large articles is not held in memory at once: the
// scratch space holds the articles of one writev.

import (
	"bytes"
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/runtime/driver"
)

const (
	// maxIovecs is how many pieces one writev takes (IOV_MAX is 1024).
	maxIovecs = 1024
	// maxGather is about how many bytes one writev gathers.
	maxGather = 4 << 20
	// maxSendfile is the most one sendfile call is asked to send.
	maxSendfile = 1 << 30
	// maxScratch is the largest scratch buffer the loop keeps between
	// collections: room for an article of driver.CopyBody octets and the
	// small ones of a writev before it.
	maxScratch = driver.CopyBody + 1<<20
)

// FileBodySource is an optional interface of Options.Bodies: a source that
// can give a stored article as a range of an open file, so that the loop
// sends it with sendfile(2). fd must stay open and hold the article's n
// bytes at off until release is called; the loop calls release exactly once
// after a nil error, when the article is sent or the connection is closed.
// The loop never uses fd's file position.
type FileBodySource interface {
	BodyFile(token string) (fd int, off, n int64, release func(), err error)
}

// outItem is one piece of output.
type outItem struct {
	b        []byte // bytes still to write (a resolved body's, too)
	token    string // a stored article, when not ""
	size     int64  // its size
	resolved bool   // token's body is in b, or in the file fields
	file     bool   // send fd[off:off+n] with sendfile
	fd       int
	off, n   int64
	release  func()
	scratch  bool // b lives in the loop's scratch buffer
}

// outQueue is a connection's unwritten output.
type outQueue struct {
	items       []outItem
	own         bool // items are the connection's, not the loop's scratch
	deadline    time.Time
	hasDeadline bool
}

// scratch is the loop's staging space for output, shared by all
// connections: a connection's output lives here until it is written or
// detached to the connection.
type scratch struct {
	items []outItem
	segs  []machine.Segment
	buf   []byte // AppendOutgoing's bytes
	body  []byte // small articles from a BodyAppender, for one flush
	iov   []unix.Iovec
	plan  []string // tokens for driver.BodyPlanner
}

func (q *outQueue) pending() bool { return len(q.items) > 0 }

// drop forgets the output, releasing open article files.
func (q *outQueue) drop() {
	for i := range q.items {
		if it := &q.items[i]; it.file && it.release != nil {
			it.release()
		}
		q.items[i] = outItem{}
	}
	q.items, q.own = nil, false
}

// pop removes the first item, which is written.
func (q *outQueue) pop() {
	if it := &q.items[0]; it.file && it.release != nil {
		it.release()
	}
	q.items[0] = outItem{}
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items, q.own = nil, false
	}
}

// popEmpty removes written byte items at the head.
func (q *outQueue) popEmpty() {
	for len(q.items) > 0 {
		it := &q.items[0]
		if it.file || len(it.b) > 0 || (it.token != "" && !it.resolved) {
			return
		}
		q.pop()
	}
}

// holdsBodies reports whether an item holds an article copied into the
// loop's scratch space.
func (q *outQueue) holdsBodies() bool {
	for i := range q.items {
		if it := &q.items[i]; it.token != "" && it.resolved && it.scratch {
			return true
		}
	}
	return false
}

// detach moves output left in the loop's scratch space to the connection:
// the items themselves, when they are the scratch space's, and the bytes
// of every item that refers to the scratch space, which includes the
// articles a flush of the connection's own items copied in.
func (q *outQueue) detach() {
	if len(q.items) == 0 {
		return
	}
	if !q.own {
		items := make([]outItem, len(q.items))
		copy(items, q.items)
		clear(q.items)
		q.items, q.own = items, true
	}
	for i := range q.items {
		if it := &q.items[i]; it.scratch {
			it.b = bytes.Clone(it.b)
			it.scratch = false
		}
	}
}

// collect takes the machine's output into the scratch space (the queue is
// empty: inputs come only after the output was written), with the write
// deadline runtime/goroutine would set. The caller must flush before any
// other connection collects: flush detaches what the socket did not take.
func (c *Conn) collect(r *run) {
	s := &c.l.scratch
	items := s.items[:0]
	if r.ss != nil {
		segs := s.segs[:0]
		for {
			n := len(segs)
			segs = r.ss.AppendSegments(segs)
			if len(segs) == n {
				break
			}
		}
		for _, sg := range segs {
			switch {
			case sg.Token != "":
				items = append(items, outItem{token: sg.Token, size: sg.Size})
			case len(sg.Bytes) > 0:
				items = append(items, outItem{b: sg.Bytes})
			}
		}
		clear(segs)
		s.segs = segs[:0]
	} else {
		buf := s.buf[:0]
		for {
			n := len(buf)
			buf = r.m.AppendOutgoing(buf)
			if len(buf) == n {
				break
			}
		}
		if len(buf) > 0 {
			items = append(items, outItem{b: buf, scratch: true})
		}
		if cap(buf) > maxScratch {
			buf = nil
		}
		s.buf = buf[:0]
	}
	s.items = items[:0]
	c.out.items, c.out.own = items, false
	if len(items) == 0 {
		c.out.items = nil
		return
	}
	c.out.deadline, c.out.hasDeadline = r.m.Deadline()
}

// flush writes as much of the output as the socket takes. What is left is
// detached from the scratch space, to wait for EPOLLOUT.
func (c *Conn) flush() error {
	q := &c.out
	s := &c.l.scratch
	// No output refers to the body scratch between flushes (detach).
	if cap(s.body) > maxScratch {
		s.body = nil
	}
	s.body = s.body[:0]
	defer q.detach()
	c.plan()
	for len(q.items) > 0 && c.writable {
		it := &q.items[0]
		if it.token != "" && !it.resolved {
			if err := c.resolve(it, c.appendable(it)); err != nil {
				return err
			}
		}
		var err error
		if it.file {
			err = c.sendfile(it)
		} else {
			err = c.writev()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// plan names the small articles (of up to driver.SmallBody octets) the
// flush will append to a driver.BodyPlanner, so that it reads what they
// span.
func (c *Conn) plan() {
	bp, ok := c.l.opts.Bodies.(driver.BodyPlanner)
	if !ok {
		return
	}
	s := &c.l.scratch
	plan := s.plan[:0]
	for i := range c.out.items {
		if it := &c.out.items[i]; it.token != "" && !it.resolved && it.size <= driver.SmallBody && c.appendable(it) {
			plan = append(plan, it.token)
		}
	}
	if len(plan) > 0 {
		bp.PlanBodies(plan)
	}
	clear(plan)
	s.plan = plan[:0]
}

// appendable reports whether a token item's article is copied in by a
// BodyAppender (one over driver.SmallBody when a driver.BodyCopier of a
// FileBodySource says so).
func (c *Conn) appendable(it *outItem) bool {
	src := c.l.opts.Bodies
	if _, ok := src.(driver.BodyAppender); !ok || it.size > driver.CopyBody {
		return false
	}
	if it.size <= driver.SmallBody {
		return true
	}
	bc, ok := src.(driver.BodyCopier)
	_, file := src.(FileBodySource)
	return !ok || !file || bc.Copied(it.token, it.size)
}

// resolve fetches the stored article of a token item: copied into the
// scratch space when it is appendable (what c.appendable said of it), as
// a file range when the source is a FileBodySource, as bytes otherwise.
func (c *Conn) resolve(it *outItem, appendable bool) error {
	src := c.l.opts.Bodies
	if appendable {
		s := &c.l.scratch
		if len(s.body) > 0 && !c.out.holdsBodies() {
			// What earlier writevs of this flush copied in is written.
			s.body = s.body[:0]
		}
		start := len(s.body)
		b, err := src.(driver.BodyAppender).AppendBody(s.body, it.token, it.size)
		if err != nil {
			return fmt.Errorf("epoll: read article %s: %w", it.token, err)
		}
		if n := int64(len(b) - start); n != it.size {
			return fmt.Errorf("epoll: read article %s: %d bytes, want %d", it.token, n, it.size)
		}
		s.body = b
		it.b, it.resolved, it.scratch = b[start:len(b):len(b)], true, true
		return nil
	}
	if fs, ok := src.(FileBodySource); ok {
		fd, off, n, release, err := fs.BodyFile(it.token)
		if err != nil {
			return fmt.Errorf("epoll: open article %s: %w", it.token, err)
		}
		if n != it.size {
			if release != nil {
				release()
			}
			return fmt.Errorf("epoll: open article %s: %d bytes, want %d", it.token, n, it.size)
		}
		it.fd, it.off, it.n, it.release, it.file, it.resolved = fd, off, n, release, true, true
		return nil
	}
	body, err := src.Body(it.token)
	if err != nil {
		return fmt.Errorf("epoll: read article %s: %w", it.token, err)
	}
	if int64(len(body)) != it.size {
		return fmt.Errorf("epoll: read article %s: %d bytes, want %d", it.token, len(body), it.size)
	}
	it.b, it.resolved = body, true
	return nil
}

// sendfile sends a file item until it is done or the socket is full.
//
// Only EAGAIN says the socket is full. A short count does not: sendfile
// stops between chunks when a signal is pending (the Go runtime preempts
// goroutines with SIGURG), however much room the socket has, and the
// kernel raises EPOLLOUT only after a write found the send buffer full
// (SOCK_NOSPACE): waiting for EPOLLOUT after such a short count waits
// for ever; so a short count is followed by another call, which sends
// more or meets EAGAIN (and arms EPOLLOUT).
func (c *Conn) sendfile(it *outItem) error {
	for it.n > 0 {
		want := int(min(it.n, maxSendfile))
		n, err := unix.Sendfile(c.fd, it.fd, &it.off, want)
		c.l.stats.Sendfiles++
		if n > 0 {
			it.n -= int64(n)
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			c.writable = false
			c.l.stats.WouldBlock++
			return nil
		case err != nil:
			return fmt.Errorf("epoll: sendfile article %s: %w", it.token, os.NewSyscallError("sendfile", err))
		case n == 0:
			return fmt.Errorf("epoll: sendfile article %s: no progress with %d bytes left", it.token, it.n)
		}
	}
	c.out.pop()
	return nil
}

// writev writes the byte items at the head of the queue, resolving
// tokens from a byte source on the way, in one writev.
func (c *Conn) writev() error {
	q := &c.out
	s := &c.l.scratch
	iov := s.iov[:0]
	total := 0
	var first []byte // the only piece, when there is one: plain write
	for i := range q.items {
		it := &q.items[i]
		if len(iov) == maxIovecs || total >= maxGather {
			break
		}
		if i > 0 && q.items[i-1].token != "" && q.items[i-1].size > driver.SmallBody {
			break // a large article ends the writev: the scratch holds one
		}
		if it.token != "" && !it.resolved {
			appendable := c.appendable(it)
			if _, ok := c.l.opts.Bodies.(FileBodySource); ok && !appendable {
				break // sendfile, once the bytes before it are written
			}
			if err := c.resolve(it, appendable); err != nil {
				if len(iov) > 0 {
					break // write what comes before; fail when it is reached
				}
				return err
			}
		}
		if it.file {
			break
		}
		if len(it.b) == 0 {
			continue
		}
		if len(iov) == 0 {
			first = it.b
		}
		iov = append(iov, unix.Iovec{Base: &it.b[0], Len: uint64(len(it.b))})
		total += len(it.b)
	}
	s.iov = iov
	if total == 0 {
		// Only empty pieces before a file item or the end.
		q.popEmpty()
		return nil
	}
	var n int
	var err error
	for {
		c.l.stats.Writes++
		if len(iov) == 1 {
			n, err = unix.Write(c.fd, first)
		} else {
			r, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(c.fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
			n, err = int(r), nil
			if e != 0 {
				n, err = 0, e
			}
		}
		if err != unix.EINTR {
			break
		}
	}
	clear(iov)
	switch {
	case err == unix.EAGAIN:
		c.writable = false
		c.l.stats.WouldBlock++
		return nil
	case err != nil:
		return fmt.Errorf("epoll: write: %w", os.NewSyscallError("writev", err))
	}
	if n < total {
		c.writable = false // the socket is full (epoll(7))
		c.l.stats.WouldBlock++
	}
	for n > 0 {
		it := &q.items[0]
		if n < len(it.b) {
			it.b = it.b[n:]
			break
		}
		n -= len(it.b)
		it.b = nil
		q.popEmpty()
	}
	q.popEmpty()
	return nil
}
