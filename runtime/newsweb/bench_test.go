package newsweb

import (
	"net/http"
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
