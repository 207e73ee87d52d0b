package newsget

import (
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestAuthRequiredWithoutCredentials: a server that answers 480 when no
// username is configured is given up at once with that reason, not
// retried with backoff until "failures in a row" (70 s with the default
// backoff, as a new user saw it).
func TestAuthRequiredWithoutCredentials(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Auth: &nntptest.Auth{User: "u", Pass: "p", Required: true}})
	a := newPosting("a.bin", 4, 6000, 3000)
	serve(t, s, nil, a)
	r := newRun(t, server(s, "s1"))
	sum := r.run(t, poster.NZB(a))
	if sum.Complete() {
		t.Fatal("complete without credentials")
	}
	if len(sum.Servers) != 1 || !strings.Contains(sum.Servers[0], "requires authentication (480) and no username/password is configured") {
		t.Errorf("servers given up: %q, want s1 for 480 without credentials", sum.Servers)
	}
	// Each of the 2 connections drew 480 once; none was dialled again.
	if n := s.Conns(); n > 2 {
		t.Errorf("%d connections to a server that needs credentials we do not have; want at most 2", n)
	}
}
