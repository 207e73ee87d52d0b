//go:build linux

package goroutine

import (
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sendMore writes bufs to c with sendmsg(2) and MSG_MORE: the kernel queues
// the bytes without pushing a short segment, as TCP_CORK would for one
// call, since the caller sends more (a sendfile) at once. The hint lasts
// for this call only: the sendfile's last chunk, sent without it, pushes
// everything. It waits through EAGAIN in Go's poller (and so honours the
// write deadline) and writes until all of bufs is taken.
func sendMore(c *net.TCPConn, bufs net.Buffers) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("sendmsg: %w", err)
	}
	iov := make([]unix.Iovec, 0, len(bufs))
	for _, b := range bufs {
		if len(b) > 0 {
			iov = append(iov, unix.Iovec{Base: &b[0], Len: uint64(len(b))})
		}
	}
	var serr error
	werr := rc.Write(func(fd uintptr) bool {
		for len(iov) > 0 {
			msg := unix.Msghdr{Iov: &iov[0]}
			msg.SetIovlen(len(iov))
			r, _, e := unix.Syscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&msg)), uintptr(unix.MSG_MORE|unix.MSG_NOSIGNAL))
			switch e {
			case 0:
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // wait until writable, then call again
			default:
				serr = e
				return true
			}
			n := int(r)
			for n > 0 && len(iov) > 0 {
				if uint64(n) < iov[0].Len {
					iov[0].Base = (*byte)(unsafe.Add(unsafe.Pointer(iov[0].Base), n))
					iov[0].Len -= uint64(n)
					break
				}
				n -= int(iov[0].Len)
				iov = iov[1:]
			}
		}
		return true
	})
	if werr != nil {
		return werr
	}
	if serr != nil {
		return fmt.Errorf("sendmsg: %w", serr)
	}
	return nil
}
