package newsweb

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// viewWriter is the ResponseWriter of one benchmarked view: a fresh header
// map, as net/http gives each request, and the body counted, not kept,
// so that the allocations reported are the handler's (httptest's recorder
// would add its own: a header snapshot, a growing buffer).
type viewWriter struct {
	header http.Header
	status int
	n      int
}

func (w *viewWriter) Header() http.Header { return w.header }

func (w *viewWriter) WriteHeader(status int) { w.status = status }

func (w *viewWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}

// BenchmarkCachedPages serves cached pages through the handler (no
// network), gzipped as browsers ask: what a view of a cached page costs
// newsweb itself, net/http's reading and writing aside. Bytes are the
// (gzipped) body's.
func BenchmarkCachedPages(b *testing.B) {
	news := newsServer(b, 500) // a group as large as newsbench web's
	f := federated(b, nil, NewMetrics(prometheus.NewRegistry()), ServerConfig{Addr: news.HostPort(), Connections: 2})
	h := New(f, Options{Logger: testLogger(b), Registerer: prometheus.NewRegistry()})
	for _, page := range []struct{ kind, path string }{
		{"article", "/articles/3@t"}, {"group", "/groups/misc.test"}, {"thread", "/groups/misc.test/threads/201@t"},
		{"thread-list-API", "/api/groups/misc.test/threads"}, {"group-list", "/"},
	} {
		path := page.path
		b.Run(page.kind, func(b *testing.B) {
			req, err := http.NewRequest("GET", path, http.NoBody)
			if err != nil {
				b.Fatal(err)
			}
			req.RequestURI = path
			req.Header.Set("Accept-Encoding", "gzip")
			w := &viewWriter{header: http.Header{}}
			h.ServeHTTP(w, req) // warm
			if w.status != http.StatusOK || w.header.Get("Content-Encoding") != "gzip" {
				b.Fatalf("%s: %d, Content-Encoding %q", path, w.status, w.header.Get("Content-Encoding"))
			}
			b.SetBytes(int64(w.n))
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(&viewWriter{header: http.Header{}}, req)
			}
		})
	}
}

// BenchmarkCachedPagesHTTP serves the same views over loopback TCP as
// cmd/newsweb does (NewHTTPServer's http.Server behind a Front), and, for
// comparison, through the http.Server alone (net-http), one keep-alive
// connection, the client a minimal HTTP/1.1 reader on the raw connection:
// what a view costs with the reading and writing, the syscalls and both
// ends in this process (allocations are the whole process's; the client
// makes none of its own).
func BenchmarkCachedPagesHTTP(b *testing.B) {
	news := newsServer(b, 500)
	f := federated(b, nil, NewMetrics(prometheus.NewRegistry()), ServerConfig{Addr: news.HostPort(), Connections: 2})
	h := New(f, Options{Logger: testLogger(b), Registerer: prometheus.NewRegistry()})
	for _, front := range []bool{true, false} {
		hs := NewHTTPServer("", h)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		name := "net-http"
		if front {
			name = "front"
			f := NewFront(hs, ln)
			go f.Serve()
			b.Cleanup(func() { f.Close() })
		} else {
			go hs.Serve(ln)
			b.Cleanup(func() { hs.Close() })
		}
		b.Run(name, func(b *testing.B) { benchViews(b, ln.Addr().String()) })
	}
}

// benchViews views each page kind on one connection to addr.
func benchViews(b *testing.B, addr string) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 64<<10)
	for _, page := range []struct{ kind, path string }{
		{"article", "/articles/3@t"}, {"group", "/groups/misc.test"}, {"thread", "/groups/misc.test/threads/201@t"},
		{"thread-list-API", "/api/groups/misc.test/threads"}, {"group-list", "/"},
	} {
		b.Run(page.kind, func(b *testing.B) {
			req := []byte("GET " + page.path + " HTTP/1.1\r\nHost: newsweb.test\r\nUser-Agent: bench\r\nAccept: */*\r\nAccept-Encoding: gzip\r\n\r\n")
			view := func() (status, n int) {
				if _, err := conn.Write(req); err != nil {
					b.Fatal(err)
				}
				status, n, err := readResponse(br)
				if err != nil {
					b.Fatal(err)
				}
				return status, n
			}
			status, n := view() // warm
			if status != http.StatusOK {
				b.Fatalf("%s: %d", page.path, status)
			}
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				view()
			}
		})
	}
}

// readResponse reads one HTTP/1.1 response with a Content-Length from br
// and discards its body: the status and the body's length.
func readResponse(br *bufio.Reader) (status, n int, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, 0, fmt.Errorf("status line %q", line)
	}
	status = atoi(line[9:12])
	n = -1
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return 0, 0, err
		}
		if len(line) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			n = atoi(bytes.TrimSpace(v))
		}
	}
	if n < 0 {
		return 0, 0, fmt.Errorf("no Content-Length")
	}
	_, err = br.Discard(n)
	return status, n, err
}

// atoi is the decimal number in b (digits only; -1 otherwise).
func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// BenchmarkParseHeadTrickle: a head of 8,000 short lines (32 KiB, under
// MaxHeaderBytes) read a byte at a time, as a slow client sends it; the
// front parses after every read, going on from where it got (headScan).
func BenchmarkParseHeadTrickle(b *testing.B) {
	head := []byte("GET / HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("x:\r\n", 8000) + "\r\n")
	for b.Loop() {
		var sc headScan
		for i := 1; i <= len(head); i++ {
			if _, _, v := parsed(head[:i], 36<<10, &sc); v != headIncomplete && i < len(head) {
				b.Fatalf("verdict %d after %d of %d bytes", v, i, len(head))
			}
		}
	}
}
