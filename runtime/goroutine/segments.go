package goroutine

// Segment output: for machines that implement machine.SegmentSender (the
// feed machine) and a Conn with Options.Bodies, flush writes command bytes
// and stored articles in order without the machine copying article bodies.
//
// Small pieces are gathered into one buffer per Conn and go out together:
// command bytes, and articles up to driver.SmallBody octets when the source
// is a driver.BodyAppender (it appends the article to the buffer, e.g. with
// one pread).
// A window of CHECKs or TAKETHISes with their 2 KB articles is then one
// write(2), not a write per command and a sendfile per article: profiling
// newsbench feed showed those syscalls as nearly two thirds of newsfeed's
// CPU time on small articles. An article of up to driver.CopyBody octets
// is appended the same way (unless a driver.BodyCopier says otherwise) and
// written with what was gathered before it, at once, so that the buffer
// holds one such article at a time. Larger articles leave by the driver.BodyWriter (sendfile from the spool) after
// the gathered bytes are written, or, from a plain BodySource, as their
// own buffer in the same writev.

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/runtime/driver"
)

// maxGather is how many bytes flushSegments gathers before it writes, so
// that a window full of large articles is not all held in memory at once.
const maxGather = 4 << 20

// gather is the pending output of one flush: bufs to write with one writev,
// the last of which may still be growing in buf (from mark on).
type gather struct {
	buf  []byte      // copied bytes; reused from one flush to the next
	mark int         // buf[mark:] is not in bufs yet
	bufs net.Buffers // what to write, in order
	n    int         // bytes pending in total
}

// copyIn appends p to the copied bytes.
func (g *gather) copyIn(p []byte) {
	g.buf = append(g.buf, p...)
	g.n += len(p)
}

// ref adds p itself (no copy) after what is pending.
func (g *gather) ref(p []byte) {
	g.seal()
	g.bufs = append(g.bufs, p)
	g.n += len(p)
}

// seal closes the current run of copied bytes into bufs. Later appends to
// buf may move it, but the sealed slice keeps pointing at the bytes it
// holds.
func (g *gather) seal() {
	if len(g.buf) > g.mark {
		g.bufs = append(g.bufs, g.buf[g.mark:len(g.buf):len(g.buf)])
		g.mark = len(g.buf)
	}
}

// writeTo writes everything pending and empties the gather for reuse.
func (g *gather) writeTo(w io.Writer) error {
	g.seal()
	var err error
	if len(g.bufs) > 0 {
		_, err = g.bufs.WriteTo(w)
	}
	clear(g.bufs[:cap(g.bufs)]) // drop references to bodies
	g.bufs, g.n, g.mark = g.bufs[:0], 0, 0
	if cap(g.buf) > 2*maxGather {
		g.buf = nil // a one-off: do not keep it
	}
	g.buf = g.buf[:0]
	if err != nil {
		return fmt.Errorf("goroutine: write: %w", err)
	}
	return nil
}

// flushSegments writes everything a SegmentSender has to send, in order.
// A stored article that cannot be read, or whose size differs from the
// segment's, fails the flush (and so the Run): the machine already counts
// the command as sent, so the connection cannot go on.
func (c *Conn) flushSegments(m machine.Conn, ss machine.SegmentSender) error {
	c.segs = c.segs[:0]
	for {
		n := len(c.segs)
		c.segs = ss.AppendSegments(c.segs)
		if len(c.segs) == n {
			break
		}
	}
	if len(c.segs) == 0 {
		return nil
	}
	nc := c.NetConn()
	if d, ok := m.Deadline(); ok {
		nc.SetWriteDeadline(c.wall(d))
	} else {
		nc.SetWriteDeadline(time.Time{})
	}
	bw, _ := c.opts.Bodies.(driver.BodyWriter)
	ba, _ := c.opts.Bodies.(driver.BodyAppender)
	bc, _ := c.opts.Bodies.(driver.BodyCopier)
	if bp, ok := c.opts.Bodies.(driver.BodyPlanner); ok && ba != nil {
		c.plan = c.plan[:0]
		for _, s := range c.segs {
			if s.Token != "" && s.Size <= driver.SmallBody {
				c.plan = append(c.plan, s.Token)
			}
		}
		if len(c.plan) > 0 {
			bp.PlanBodies(c.plan)
		}
		clear(c.plan)
	}
	g := &c.gather
	for i, s := range c.segs {
		c.segs[i] = machine.Segment{} // drop the reference once handled
		switch {
		case s.Token == "" && len(s.Bytes) <= driver.SmallBody:
			g.copyIn(s.Bytes)
		case s.Token == "":
			g.ref(s.Bytes)
		case ba != nil && s.Size <= driver.CopyBody && (s.Size <= driver.SmallBody || bw == nil || bc == nil || bc.Copied(s.Token, s.Size)):
			before := len(g.buf)
			var err error
			g.buf, err = ba.AppendBody(g.buf, s.Token, s.Size)
			if err != nil {
				g.writeTo(io.Discard)
				return fmt.Errorf("goroutine: read article %s: %w", s.Token, err)
			}
			if n := int64(len(g.buf) - before); n != s.Size {
				g.writeTo(io.Discard)
				return fmt.Errorf("goroutine: read article %s: %d bytes, want %d", s.Token, n, s.Size)
			}
			g.n += int(s.Size)
			if s.Size > driver.SmallBody {
				if err := g.writeTo(nc); err != nil {
					return err
				}
			}
		case bw != nil:
			if err := g.writeTo(nc); err != nil {
				return err
			}
			n, err := bw.WriteBody(nc, s.Token, s.Size)
			if err != nil {
				return fmt.Errorf("goroutine: write article %s: %w", s.Token, err)
			}
			if n != s.Size {
				return fmt.Errorf("goroutine: write article %s: wrote %d bytes, want %d", s.Token, n, s.Size)
			}
		default:
			body, err := c.opts.Bodies.Body(s.Token)
			if err != nil {
				g.writeTo(io.Discard)
				return fmt.Errorf("goroutine: read article %s: %w", s.Token, err)
			}
			if int64(len(body)) != s.Size {
				g.writeTo(io.Discard)
				return fmt.Errorf("goroutine: read article %s: %d bytes, want %d", s.Token, len(body), s.Size)
			}
			g.ref(body)
		}
		if g.n >= maxGather {
			if err := g.writeTo(nc); err != nil {
				return err
			}
		}
	}
	return g.writeTo(nc)
}
