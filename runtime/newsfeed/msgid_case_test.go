package newsfeed

import (
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestMessageIDDomainCase offers four spellings of one message-id that
// differ only in the case of the domain, as an upstream that multiplies
// copies would: the relay takes one article and relays one; a different
// local part is a different article.
func TestMessageIDDomainCase(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	h := startRelay(t, relayConfig(t, t.TempDir(), peerText("p", s, "")), nil)
	c := dialIngest(t, h.r.Addr().String())
	variants := []string{"<case@example.org>", "<case@EXAMPLE.ORG>", "<case@Example.Org>", "<case@eXaMpLe.oRg>"}
	arts := map[string][]byte{}
	for _, id := range variants {
		arts[id] = testArticle(id, "misc.test", "up!x", 2)
	}
	got := c.takethis(arts)
	accepted := 0
	for _, code := range got {
		if code == "239" {
			accepted++
		}
	}
	if accepted != 1 {
		t.Errorf("TAKETHIS of four spellings: answers %v, want one 239", got)
	}
	if r := c.cmd("CHECK <case@EXAMPLE.org>"); !strings.HasPrefix(r, "438 <case@EXAMPLE.org>") && !strings.HasPrefix(r, "431 <case@EXAMPLE.org>") {
		t.Errorf("CHECK of another spelling: %q, want 438 or 431", r)
	}
	if r := c.cmd("CHECK <CASE@example.org>"); !strings.HasPrefix(r, "238 <CASE@example.org>") {
		t.Errorf("CHECK of another local part: %q, want 238", r)
	}
	h.settle()
	n := 0
	for _, id := range s.AcceptedIDs() {
		for _, v := range variants {
			if id == v {
				n++
			}
		}
	}
	if n != 1 {
		t.Errorf("sink took %d spellings (%v), want 1", n, s.AcceptedIDs())
	}
}
