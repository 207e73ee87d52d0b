//go:build linux

package goroutine

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"
)

// TestSendMorePartialWrites: sendMore writes every byte of many pieces in
// order when the socket takes them a little at a time (small buffers, so
// sendmsg returns short counts and EAGAIN, in the middle of pieces), and
// what it wrote is not held back once a plain write follows (the MSG_MORE
// hint lasts for its own call only).
func TestSendMorePartialWrites(t *testing.T) {
	got := make(chan []byte, 1)
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		b, _ := io.ReadAll(r)
		got <- b
	})
	nc := dial(t, addr).(*net.TCPConn)
	if err := nc.SetWriteBuffer(4096); err != nil {
		t.Fatal(err)
	}
	var bufs net.Buffers
	var want []byte
	for i := range 40 {
		// Odd sizes, each piece its own byte, so that a piece written
		// twice, skipped or cut at the wrong offset shows.
		p := bytes.Repeat([]byte{byte('A' + i%26)}, 10_007+i*997)
		bufs = append(bufs, p)
		want = append(want, p...)
	}
	bufs = append(bufs, nil, []byte("TAKETHIS <last@x>\r\n")) // an empty piece is skipped
	want = append(want, "TAKETHIS <last@x>\r\n"...)
	if err := sendMore(nc, bufs); err != nil {
		t.Fatalf("sendMore: %v", err)
	}
	body := "Subject: last\r\n\r\nbody\r\n.\r\n"
	if _, err := nc.Write([]byte(body)); err != nil {
		t.Fatalf("write: %v", err)
	}
	want = append(want, body...)
	nc.Close()
	b := <-got
	if !bytes.Equal(b, want) {
		i := 0
		for i < len(b) && i < len(want) && b[i] == want[i] {
			i++
		}
		t.Fatalf("read %d bytes, want %d; first difference at offset %d", len(b), len(want), i)
	}
}
