package newsweb

import (
	"strings"
	"testing"
	"time"
)

// Counts of one are said in the singular: "1 article in 1 thread", the
// outline "of the 1 post".
func TestPagesSingular(t *testing.T) {
	news := newsServer(t, 1)
	log := testLogger(t)
	svc := NewService(ServerConfig{Addr: news.HostPort(), Name: "loop", Connections: 1}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	srv := newFrontServer(t, New(fed, Options{Logger: log}))
	t.Cleanup(func() { srv.Close(); fed.Close() })
	for path, want := range map[string]string{
		"/groups/misc.test":             "1 article in 1 thread, ",
		"/groups/misc.test/threads/1@t": "Outline of the 1 post<",
	} {
		_, page := get(t, srv.URL+path)
		if !strings.Contains(page, want) {
			t.Errorf("%s does not say %q:\n%s", path, want, clip(page))
		}
	}
}
