package relay

import (
	"fmt"
	"io"
	"syscall"

	"github.com/newsflow/newsflow/spoolfs"
)

// spoolBodies gives the feed runtime the stored articles it sends
// (machine.BodySource), and writes them itself (goroutine.BodyWriter):
// with sendfile(2) straight from the segment file when the connection is a
// plain TCP socket, by copying otherwise (TLS).
type spoolBodies struct{ s *spoolfs.Spool }

// Body returns the wire article named by token.
func (b spoolBodies) Body(token string) ([]byte, error) {
	tok, err := spoolfs.ParseToken(token)
	if err != nil {
		return nil, err
	}
	return b.s.Get(tok)
}

// WriteBody writes the wire article named by token, size bytes, to w.
func (b spoolBodies) WriteBody(w io.Writer, token string, size int64) (int64, error) {
	tok, err := spoolfs.ParseToken(token)
	if err != nil {
		return 0, err
	}
	if int64(tok.Len) != size {
		return 0, fmt.Errorf("relay: token %s holds %d bytes, want %d", token, tok.Len, size)
	}
	sec, err := b.s.Section(tok)
	if err != nil {
		return 0, err
	}
	defer sec.Close()
	if sc, ok := w.(syscall.Conn); ok {
		return sec.SendTo(sc)
	}
	return io.Copy(w, sec.Reader())
}
