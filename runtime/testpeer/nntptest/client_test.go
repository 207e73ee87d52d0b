package nntptest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// client is a raw test client: it writes lines and reads lines, with a
// generous deadline so a broken server fails the test instead of hanging it.
type client struct {
	t  testing.TB
	nc net.Conn
	r  *bufio.Reader
}

const ioLimit = 10 * time.Second

// hostPorter is a Server or a Script.
type hostPorter interface{ HostPort() string }

func dial(t testing.TB, s hostPorter) *client {
	t.Helper()
	nc, err := net.Dial("tcp", s.HostPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(ioLimit))
	return &client{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// dialGreeted dials and checks that the greeting is 200 or 201.
func dialGreeted(t testing.TB, s hostPorter) *client {
	t.Helper()
	c := dial(t, s)
	if g := c.line(); !strings.HasPrefix(g, "200 ") && !strings.HasPrefix(g, "201 ") {
		t.Fatalf("greeting %q", g)
	}
	return c
}

func (c *client) startTLS(cfg *tls.Config) {
	c.t.Helper()
	tc := tls.Client(c.nc, cfg)
	if err := tc.Handshake(); err != nil {
		c.t.Fatalf("TLS handshake: %v", err)
	}
	c.nc, c.r = tc, bufio.NewReader(tc)
}

func (c *client) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatalf("send %q: %v", s, err)
	}
}

// line reads one line without its CRLF.
func (c *client) line() string {
	c.t.Helper()
	l, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read line (got %q): %v", l, err)
	}
	return strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
}

// response reads a status line and, if the command verb draws a block with
// that code, the block's lines as sent (dot-stuffed) up to and including ".".
func (c *client) response(verb string) []string {
	c.t.Helper()
	st := c.line()
	out := []string{st}
	r, err := proto.ParseResponse([]byte(st))
	if err != nil || !proto.MultiLine(verb, r.Code) {
		return out
	}
	for {
		l := c.line()
		out = append(out, l)
		if l == "." {
			return out
		}
	}
}

// do sends one command line and reads its response.
func (c *client) do(line string) []string {
	c.t.Helper()
	c.send(line + "\r\n")
	verb, _, _ := strings.Cut(line, " ")
	return c.response(strings.ToUpper(verb))
}

// rest reads until EOF and returns what came.
func (c *client) rest() string {
	c.t.Helper()
	b, err := io.ReadAll(c.r)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		c.t.Fatalf("read to EOF (got %q): %v", b, err)
	}
	return string(b)
}

// silent reports whether nothing arrives within d. It is only used to show
// that a hanging server stays silent: it cannot fail when the server is
// right, only when it answers.
func (c *client) silent(d time.Duration) bool {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(d))
	defer c.nc.SetReadDeadline(time.Now().Add(ioLimit))
	_, err := c.r.ReadByte()
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}
