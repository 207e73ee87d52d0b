package newsfeed

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// Tests of the ingest limits, each under both runtimes. Without the
// limits every connection is greeted 200, a feeder that stops reading
// holds its ids for ever, a drip never
// ends, and buffered bytes grow with the number of connections.

// rawDial connects to the ingest listener and returns the connection and
// its greeting.
func rawDial(t *testing.T, addr string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	g, _ := br.ReadString('\n')
	return c, br, strings.TrimRight(g, "\r\n")
}

func TestConnectionLimits(t *testing.T) { forRuntimes(t, testConnectionLimits) }

func testConnectionLimits(t *testing.T, rt string) {
	// The global limit.
	h := startRelay(t, relayConfigRT(t, rt, t.TempDir(), "max_connections = 2\n"), nil)
	addr := h.r.Addr().String()
	dialIngest(t, addr)
	c2 := dialIngest(t, addr)
	waitFor(t, 10*time.Second, "2 connections open", func() bool { return h.r.Status().Ingest.Open == 2 }, nil)
	if _, _, g := rawDial(t, addr); g != "400 Too many connections" {
		t.Errorf("third connection: greeting %q, want 400 (max_connections 2)", g)
	}
	// A connection that ends makes room.
	c2.c.Close()
	waitFor(t, 10*time.Second, "a free slot", func() bool { return h.r.Status().Ingest.Open == 1 }, nil)
	dialIngest(t, addr)
	if n := h.r.Status().Ingest.Limited; n != 1 {
		t.Errorf("limited = %d, want 1", n)
	}

	// The per-address limit.
	h2 := startRelay(t, relayConfigRT(t, rt, t.TempDir(), "max_connections_per_host = 1\n"), nil)
	addr2 := h2.r.Addr().String()
	dialIngest(t, addr2)
	if _, _, g := rawDial(t, addr2); g != "400 Too many connections from this address" {
		t.Errorf("second connection from 127.0.0.1: greeting %q, want 400 (max_connections_per_host 1)", g)
	}
	if n := h2.r.Status().Ingest.Limited; n != 1 {
		t.Errorf("limited = %d, want 1", n)
	}
}

// TestWriteTimeoutReleasesIDs: a feeder that CHECKs ids and never reads the
// answers is closed after write_timeout, and the ids it reserved can be
// offered on other connections again (they drew 431 for as long as it
// lived).
func TestWriteTimeoutReleasesIDs(t *testing.T) { forRuntimes(t, testWriteTimeoutReleasesIDs) }

func testWriteTimeoutReleasesIDs(t *testing.T, rt string) {
	h := startRelay(t, relayConfigRT(t, rt, t.TempDir(), "write_timeout = \"1s\"\n"), nil)
	addr := h.r.Addr().String()
	c, _, _ := rawDial(t, addr)
	c.(*net.TCPConn).SetReadBuffer(4096)
	go func() {
		w := bufio.NewWriterSize(c, 64<<10)
		for i := 0; i < 400000; i++ {
			if _, err := fmt.Fprintf(w, "CHECK <w%d@t>\r\n", i); err != nil {
				return
			}
		}
		w.Flush()
	}()
	waitFor(t, 60*time.Second, "the connection that does not read to be closed", func() bool {
		return h.r.Status().Ingest.TimedOut >= 1
	}, func() string { return fmt.Sprintf("%+v", h.r.Status().Ingest) })
	other := dialIngest(t, addr)
	if r := other.cmd("CHECK <w0@t>"); !strings.HasPrefix(r, "238 ") {
		t.Errorf("CHECK of an id the closed connection had reserved: %q, want 238", r)
	}
}

// TestSlowArticle: an article dripped a byte every 100 ms is ended by
// article_timeout and min_transfer_rate, though it never stalls.
func TestSlowArticle(t *testing.T) { forRuntimes(t, testSlowArticle) }

func testSlowArticle(t *testing.T, rt string) {
	h := startRelay(t, relayConfigRT(t, rt, t.TempDir(), "article_timeout = \"1s\"\nmin_transfer_rate = 1024\n"), nil)
	c, br, _ := rawDial(t, h.r.Addr().String())
	done := make(chan string, 1)
	go func() {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		l, _ := br.ReadString('\n')
		done <- strings.TrimRight(l, "\r\n")
	}()
	fmt.Fprintf(c, "TAKETHIS <drip@t>\r\nPath: x\r\n")
	var got string
drip:
	for i := 0; i < 600; i++ {
		select {
		case got = <-done:
			break drip
		case <-time.After(100 * time.Millisecond):
			c.Write([]byte("x"))
		}
	}
	if !strings.HasPrefix(got, "400 Article transfer too slow") {
		t.Fatalf("after the drip: %q, want 400 Article transfer too slow", got)
	}
	waitFor(t, 10*time.Second, "the timeout to be counted", func() bool { return h.r.Status().Ingest.TimedOut == 1 },
		func() string { return fmt.Sprintf("%+v", h.r.Status().Ingest) })
}

// TestBufferBudget: two connections each in the middle of a 48 KiB article
// under a 64 KiB budget: the one that pushes the sum over it is held (not
// read) until the other finishes, then completes; nothing is lost.
func TestBufferBudget(t *testing.T) { forRuntimes(t, testBufferBudget) }

func testBufferBudget(t *testing.T, rt string) {
	h := startRelay(t, relayConfigRT(t, rt, t.TempDir(), "max_article_size = \"64K\"\nmax_buffered_bytes = \"64K\"\n"), nil)
	addr := h.r.Addr().String()
	type conn struct {
		c    net.Conn
		br   *bufio.Reader
		rest []byte
	}
	var cs []conn
	for i := range 2 {
		c, br, _ := rawDial(t, addr)
		id := fmt.Sprintf("<budget%d@t>", i)
		wire := proto.ToWire(testArticle(id, "misc.test", "up!x", 600)) // ~48 KiB
		half := len(wire) - 100
		fmt.Fprintf(c, "TAKETHIS %s\r\n", id)
		if _, err := c.Write(wire[:half]); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, conn{c, br, wire[half:]})
		if i == 0 {
			waitFor(t, 10*time.Second, "the first article to be buffered", func() bool {
				return h.r.Status().Ingest.Buffered >= int64(half)
			}, nil)
		}
	}
	waitFor(t, 10*time.Second, "the second connection to be held", func() bool {
		return h.r.Status().Ingest.Held >= 1
	}, func() string { return fmt.Sprintf("%+v", h.r.Status().Ingest) })
	if b := h.r.Status().Ingest.Buffered; b > 64<<10+64<<10 {
		t.Errorf("buffered %d octets, want the budget plus at most one read", b)
	}
	for i, c := range cs {
		c.c.Write(c.rest)
		c.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		l, _ := c.br.ReadString('\n')
		if !strings.HasPrefix(l, "239 ") {
			t.Errorf("connection %d: %q, want 239", i, l)
		}
	}
	waitFor(t, 10*time.Second, "the buffered sum to return to 0", func() bool {
		return h.r.Status().Ingest.Buffered == 0
	}, nil)
}
