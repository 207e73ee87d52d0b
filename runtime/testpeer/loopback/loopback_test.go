package loopback

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
)

func TestServeOne(t *testing.T) {
	got := make(chan string, 1)
	addr := ServeOne(t, func(c net.Conn, r *bufio.Reader) {
		line, _ := r.ReadString('\n')
		got <- line
		io.WriteString(c, "200 hello\r\n")
	})
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("address %q, want one on 127.0.0.1", addr)
	}
	c := Dial(t, addr)
	io.WriteString(c, "QUIT\r\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if line != "200 hello\r\n" || err != nil {
		t.Errorf("client read %q, %v", line, err)
	}
	if l := <-got; l != "QUIT\r\n" {
		t.Errorf("server read %q", l)
	}
	// The handler has returned: its connection is closed.
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("read after the handler returned: %d, %v; want EOF", n, err)
	}
}

func TestServe(t *testing.T) {
	addr := Serve(t, func(c net.Conn) {
		io.Copy(c, c)
	})
	for _, msg := range []string{"one\r\n", "two\r\n", "three\r\n"} {
		c := Dial(t, addr)
		io.WriteString(c, msg)
		line, err := bufio.NewReader(c).ReadString('\n')
		if line != msg || err != nil {
			t.Errorf("echo of %q: %q, %v", msg, line, err)
		}
		c.Close()
	}
}

func TestPair(t *testing.T) {
	client, server := Pair(t)
	io.WriteString(client, "x")
	b := make([]byte, 1)
	if _, err := io.ReadFull(server, b); err != nil || b[0] != 'x' {
		t.Errorf("server read %q, %v", b, err)
	}
	if client.RemoteAddr().String() != server.LocalAddr().String() {
		t.Errorf("client's peer %v is not the server's end %v", client.RemoteAddr(), server.LocalAddr())
	}
}
