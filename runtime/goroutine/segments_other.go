//go:build !linux

package goroutine

import "net"

// sendMore writes bufs to c (without the MSG_MORE hint of Linux).
func sendMore(c *net.TCPConn, bufs net.Buffers) error {
	_, err := bufs.WriteTo(c)
	return err
}
