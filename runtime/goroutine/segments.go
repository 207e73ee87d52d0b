package goroutine

// Segment output: for machines that implement machine.SegmentSender (the
// feed machine) and a Conn with Options.Bodies, flush writes command bytes
// and stored articles in order without the machine copying article bodies:
// byte segments and bodies from BodySource.Body are gathered into
// net.Buffers (one writev on a TCP connection), and a source that
// implements BodyWriter writes each article to the connection itself, so
// that a spool can use sendfile.

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/newsflow/newsflow/machine"
)

// BodyWriter is an optional interface of Options.Bodies: a source that
// writes the stored article named by token, exactly size bytes, to w
// itself (for example with io.Copy from the spool file, which lets the
// kernel use sendfile), and returns how many bytes it wrote.
type BodyWriter interface {
	WriteBody(w io.Writer, token string, size int64) (int64, error)
}

// maxGather is how many bytes flushSegments gathers before it writes, so
// that a window full of large articles is not all held in memory at once.
const maxGather = 4 << 20

// flushSegments writes everything a SegmentSender has to send, in order.
// A stored article that cannot be read, or whose size differs from the
// segment's, fails the flush (and so the Run): the machine already counts
// the command as sent, so the connection cannot go on.
func (c *Conn) flushSegments(m machine.Conn, ss machine.SegmentSender) error {
	var segs []machine.Segment
	for {
		n := len(segs)
		segs = ss.AppendSegments(segs)
		if len(segs) == n {
			break
		}
	}
	if len(segs) == 0 {
		return nil
	}
	nc := c.NetConn()
	if d, ok := m.Deadline(); ok {
		nc.SetWriteDeadline(d)
	} else {
		nc.SetWriteDeadline(time.Time{})
	}
	bw, _ := c.opts.Bodies.(BodyWriter)
	var bufs net.Buffers
	gathered := 0
	write := func() error {
		if len(bufs) == 0 {
			return nil
		}
		_, err := bufs.WriteTo(nc)
		bufs, gathered = nil, 0
		if err != nil {
			return fmt.Errorf("goroutine: write: %w", err)
		}
		return nil
	}
	for _, s := range segs {
		switch {
		case s.Token == "":
			bufs = append(bufs, s.Bytes)
			gathered += len(s.Bytes)
		case bw != nil:
			if err := write(); err != nil {
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
				return fmt.Errorf("goroutine: read article %s: %w", s.Token, err)
			}
			if int64(len(body)) != s.Size {
				return fmt.Errorf("goroutine: read article %s: %d bytes, want %d", s.Token, len(body), s.Size)
			}
			bufs = append(bufs, body)
			gathered += len(body)
		}
		if gathered >= maxGather {
			if err := write(); err != nil {
				return err
			}
		}
	}
	return write()
}
