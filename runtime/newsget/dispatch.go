package newsget

// Carrying out the Scheduler's decisions: its events become requests in
// connections' mailboxes, dialing goroutines and file updates; connections
// that got work are woken after Engine.mu is released.

import (
	"fmt"
	"time"

	"github.com/newsflow/newsflow/machine/download"
)

// kickLoop wakes the engine's loop.
func (e *Engine) kickLoop() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// dispatch drains the Scheduler's events and carries them out; it
// returns the connections that got new requests (to wake, after mu is
// released), except self. Called with mu held.
func (e *Engine) dispatch(now time.Time, self *connRun) []*connRun {
	var wake []*connRun
	changed := false
	for {
		ev, ok := e.sched.NextEvent()
		if !ok {
			break
		}
		changed = true
		switch ev := ev.(type) {
		case download.Assign:
			c := e.conns[ev.Conn]
			if c == nil {
				continue // cannot happen: the Scheduler assigns to connections it knows are up
			}
			c.mailbox = append(c.mailbox, ev.Request())
			if c != self && !c.woken {
				c.woken = true
				wake = append(wake, c)
			}
		case download.Dial:
			sr := e.byID[ev.Server]
			c := &connRun{id: ev.Conn, srv: sr}
			e.conns[ev.Conn] = c
			e.wg.Add(1)
			go e.dial(c)
		case download.SegmentDone:
			o := e.files[ev.Segment.File]
			o.remaining--
			o.pendingDone = append(o.pendingDone, ev.Segment.Number)
			e.noteSegment(o, ev.Segment.Number, ev.Server, nil)
		case download.SegmentFailed:
			o := e.files[ev.Segment.File]
			o.remaining--
			e.noteMissing(o, ev)
			e.noteSegment(o, ev.Segment.Number, 0, ev.Verdicts)
		case download.ServerBlocked:
			sr := e.byID[ev.Server]
			sr.blockedUntil = ev.Until
			if e.closing || e.ctx.Err() != nil {
				break // the stop's cancelled dials: nothing to warn of
			}
			e.log.Warn("server blocked", "server", sr.cfg.Label(), "until", ev.Until.Format(time.TimeOnly),
				"failures", ev.Failures, "cause", ev.Cause, "last", sr.lastErr)
			limit, never := e.opts.MaxServerFailures, ""
			if n := e.opts.MaxStartFailures; !sr.wasUp && n > 0 && n < limit {
				limit, never = n, ", never connected"
			}
			if ev.Failures >= limit && !sr.gaveUp {
				e.giveUp(now, sr, fmt.Sprintf("%d failures in a row%s (%s)", ev.Failures, never, orCause(sr.lastErr, ev.Cause)))
			}
		case download.ServerUnblocked:
			e.byID[ev.Server].blockedUntil = time.Time{}
			e.log.Info("server unblocked", "server", e.byID[ev.Server].cfg.Label())
		}
	}
	if changed {
		e.kickLoop()
	}
	return wake
}

func orCause(last, cause string) string {
	if last != "" {
		return last
	}
	return cause
}

// giveUp deactivates a server for the rest of the run. Called with mu
// held; the events it causes are drained by the caller's dispatch loop.
func (e *Engine) giveUp(now time.Time, sr *serverRun, why string) {
	if sr.gaveUp {
		return
	}
	sr.gaveUp = true
	sr.lastErr = why
	e.log.Error("server given up", "server", sr.cfg.Label(), "why", why)
	e.sched.SetActive(now, sr.id, false)
	e.kickLoop()
}

// wakeAll wakes connections that got requests.
func (e *Engine) wakeAll(cs []*connRun) {
	for _, c := range cs {
		c.mb.Wake()
	}
}

// closeAll asks every connection to close: gracefully (QUIT once idle)
// or, when abort, at once.
func (e *Engine) closeAll(abort bool) {
	e.mu.Lock()
	var cs []*connRun
	for _, c := range e.conns {
		cs = append(cs, c)
	}
	e.mu.Unlock()
	if abort {
		e.stop()
		return
	}
	e.wakeAll(cs)
	// Connections still dialing close as soon as they come up (closing
	// is set); a hung server is cut by the Fetch's own timeout.
}
