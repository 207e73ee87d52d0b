package spoolfs

import (
	"bytes"
	"io"
	"net"
	"testing"
)

// TestSectionSendTo sends articles over real loopback TCP with sendfile and
// checks the peer receives exactly the wire bytes, back to back, including
// one much larger than a socket buffer (so sendfile meets EAGAIN).
func TestSectionSendTo(t *testing.T) {
	s := openT(t, t.TempDir(), SpoolOptions{})
	defer s.Close()
	sizes := []int{100, 2000, 4 << 20}
	var want []byte
	var toks []Token
	for i, size := range sizes {
		id := msgID("send", i)
		w := wireArticle(id, size)
		want = append(want, w...)
		toks = append(toks, putT(t, s, id, w, t0))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(c)
		c.Close()
		got <- b
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for i, tok := range toks {
		x, err := s.Section(tok)
		if err != nil {
			t.Fatal(err)
		}
		n, err := x.SendTo(conn.(*net.TCPConn))
		x.Close()
		if err != nil || n != int64(tok.Len) {
			t.Fatalf("SendTo(article %d) = %d, %v; want %d", i, n, err, tok.Len)
		}
	}
	conn.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("peer received %d bytes that differ from the %d sent", len(b), len(want))
	}
}
