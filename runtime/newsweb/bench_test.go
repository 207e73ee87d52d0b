package newsweb

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkCachedPages serves cached pages through the handler (no
// network): what a view of a cached page costs newsweb itself.
func BenchmarkCachedPages(b *testing.B) {
	news := newsServer(b, 20)
	f := federated(b, nil, NewMetrics(prometheus.NewRegistry()), ServerConfig{Addr: news.HostPort(), Connections: 2})
	h := New(f, Options{Logger: testLogger(b)})
	for _, path := range []string{"/articles/3@t", "/groups/misc.test", "/groups/misc.test/threads/1@t", "/api/groups/misc.test/threads", "/"} {
		b.Run(path, func(b *testing.B) {
			req := httptest.NewRequest("GET", path, nil)
			req.Header.Set("Accept-Encoding", "gzip")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req) // warm
			if w.Code != http.StatusOK {
				b.Fatalf("%s: %d", path, w.Code)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
			}
		})
	}
}
