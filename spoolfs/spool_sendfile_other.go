//go:build !linux

package spoolfs

import (
	"fmt"
	"io"
	"syscall"
)

// SendTo writes the article to conn, which must be an io.Writer. Outside
// Linux it copies through user space.
func (x *Section) SendTo(conn syscall.Conn) (int64, error) {
	w, ok := conn.(io.Writer)
	if !ok {
		return 0, fmt.Errorf("spool: send: %T is not an io.Writer", conn)
	}
	return io.Copy(w, x.Reader())
}
