package newsfeed

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

func TestParseHashFeed(t *testing.T) {
	tests := []struct {
		in      string
		want    hashFeed
		wantErr string
	}{
		{"1/2", hashFeed{{1, 1, 2, 0}}, ""},
		{"1-3/10", hashFeed{{1, 3, 10, 0}}, ""},
		{"1-3/9_4", hashFeed{{1, 3, 9, 4}}, ""},
		{"1/4, 3-4/4_12", hashFeed{{1, 1, 4, 0}, {3, 4, 4, 12}}, ""},
		{"0/2", nil, "1 <= start <= end <= mod"},
		{"3/2", nil, "1 <= start <= end <= mod"},
		{"2-1/4", nil, "1 <= start <= end <= mod"},
		{"1/0", nil, "mod must be"},
		{"1", nil, "want value/mod"},
		{"1/2_13", nil, "offset"},
		{"@1-3/10", nil, "legacy"},
		{"", nil, "want value/mod"},
	}
	for _, tc := range tests {
		got, err := parseHashFeed(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseHashFeed(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseHashFeed(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("parseHashFeed(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func FuzzParseHashFeed(f *testing.F) {
	for _, s := range []string{"1/2", "1-3/10", "1-3/9_4", "1/4,3-4/4_12", "@1/2", "4294967295/4294967295_12"} {
		f.Add(s, "<a@b>")
	}
	f.Fuzz(func(t *testing.T, s, id string) {
		hf, err := parseHashFeed(s)
		if err != nil {
			return
		}
		for _, r := range hf {
			if r.Lo < 1 || r.Hi < r.Lo || r.Hi > r.Mod || r.Offset < 0 || r.Offset > 12 {
				t.Fatalf("parseHashFeed(%q) gave %+v", s, r)
			}
		}
		hf.wants(id) // never panics
		// A full range takes everything.
		if !(hashFeed{{1, hf[0].Mod, hf[0].Mod, hf[0].Offset}}).wants(id) {
			t.Fatalf("1-%d/%d does not take %q", hf[0].Mod, hf[0].Mod, id)
		}
	})
}

// TestHashFeedSplits: the slices 1/4 .. 4/4 take every Message-ID exactly
// once, and Diablo's example ids fall where its definition puts them.
func TestHashFeedSplits(t *testing.T) {
	var parts []hashFeed
	for i := 1; i <= 4; i++ {
		hf, err := parseHashFeed(fmt.Sprintf("%d/4", i))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, hf)
	}
	counts := make([]int, 4)
	for n := range 4000 {
		id := fmt.Sprintf("<split%d@Example.ORG>", n)
		taken := 0
		for i, hf := range parts {
			if hf.wants(id) {
				taken++
				counts[i]++
			}
		}
		if taken != 1 {
			t.Fatalf("%s taken by %d slices", id, taken)
		}
	}
	for i, c := range counts {
		if c < 800 || c > 1200 {
			t.Errorf("slice %d/4 took %d of 4000", i+1, c)
		}
	}
	// Diablo's documented example: 1-120/360 at offset 8 takes the first
	// and not the second.
	hf, _ := parseHashFeed("1-120/360_8")
	for id, want := range map[string]bool{
		"<part29of143.RndMw4FFWQ9TdIWjYDmt@camelsystem-powerpost.local>": true,
		"<part6of143.htzsE$6rldAt7WuGTpr9@camelsystem-powerpost.local>":  false,
	} {
		if got := hf.wants(id); got != want {
			t.Errorf("1-120/360_8 wants %s: %v, want %v", id, got, want)
		}
	}
}

// TestRouteHashFeed: two peers with hashfeed "1-2/4" and "3-4/4" get each
// article exactly once between them, as the expressions decide.
func TestRouteHashFeed(t *testing.T) {
	a := nntptest.Start(t, nntptest.Options{Hostname: "a"})
	b := nntptest.Start(t, nntptest.Options{Hostname: "b"})
	h := startRelay(t, relayConfig(t, t.TempDir(), peerText("a", a, `hashfeed = "1-2/4"`)+peerText("b", b, `hashfeed = "3-4/4"`)), nil)
	arts := map[string][]byte{}
	for i := range 40 {
		id := fmt.Sprintf("<h%d@t>", i)
		arts[id] = testArticle(id, "misc.test", "up!x", 1)
	}
	dialIngest(t, h.r.Addr().String()).takethis(arts)
	h.settle()
	half, _ := parseHashFeed("1-2/4")
	for id := range arts {
		if a.Has(id) == b.Has(id) || a.Has(id) != half.wants(id) {
			t.Errorf("%s: a %v, b %v; 1-2/4 takes it: %v", id, a.Has(id), b.Has(id), half.wants(id))
		}
	}
	pa, _ := h.r.PeerStats("a")
	pb, _ := h.r.PeerStats("b")
	if pa.SkippedHash+pb.SkippedHash != 40 {
		t.Errorf("skipped_hash %d + %d, want 40", pa.SkippedHash, pb.SkippedHash)
	}
}

// TestRoutePathNameExclusions feeds three articles to a relay whose peer
// has pathname = "peer/hub1,hub2" (newsfeeds' site/exclusions): the ones
// whose Path holds hub1 or the peer's own name are not offered; the other
// one is.
func TestRoutePathNameExclusions(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	h := startRelay(t, relayConfig(t, t.TempDir(), peerText("peer", s, `pathname = "peer/hub1,hub2"`)), nil)
	arts := map[string][]byte{
		"<x1@t>": testArticle("<x1@t>", "misc.test", "a!hub1!up!not-for-mail", 1),
		"<x2@t>": testArticle("<x2@t>", "misc.test", "a!peer!not-for-mail", 1),
		"<x3@t>": testArticle("<x3@t>", "misc.test", "a!hub3!not-for-mail", 1),
	}
	c := dialIngest(t, h.r.Addr().String())
	c.takethis(arts)
	h.settle()
	got := s.AcceptedIDs()
	if diff := cmp.Diff([]string{"<x3@t>"}, got); diff != "" {
		t.Errorf("peer got (-want +got):\n%s", diff)
	}
	ps, _ := h.r.PeerStats("peer")
	if ps.SkippedPath != 2 {
		t.Errorf("skipped_path = %d, want 2", ps.SkippedPath)
	}
}

// TestHashFeedINN checks the hashfeed against INN's own: a real innd
// with file feeds "Q1-2/4", "Q3-4/4" and "Q1-3/9_4" is given 80 articles
// (some with upper-case domains); each site's batch must hold exactly the
// ids the same expression takes here.
func TestHashFeedINN(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skip(err)
	}
	exprs := map[string]string{"qa": "1-2/4", "qb": "3-4/4", "qc": "1-3/9_4"}
	var feeds []inntest.Feed
	for name, e := range exprs {
		feeds = append(feeds, inntest.Feed{Name: name, Addr: "127.0.0.1:9", Kind: inntest.FeedFile, Flags: "Q" + e})
	}
	inn := inntest.Start(t, inntest.Options{Feeds: feeds})
	arts := map[string][]byte{}
	var ids []string
	for i := range 80 {
		id := fmt.Sprintf("<hash%d@Host%d.Example>", i, i%3)
		ids = append(ids, id)
		arts[id] = testArticle(id, "local.test", "up.example!not-for-mail", 1)
	}
	postToINN(t, inn.Addr(), arts)
	if out, err := inn.Ctlinnd("flush", ""); err != nil {
		t.Fatalf("ctlinnd flush: %v %s", err, out)
	}
	for name, e := range exprs {
		b, err := os.ReadFile(filepath.Join(inn.Dir(), "spool", "outgoing", name))
		if err != nil {
			t.Fatalf("batch of %s: %v", name, err)
		}
		innGot := map[string]bool{}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 {
				innGot[f[1]] = true
			}
		}
		hf, err := parseHashFeed(e)
		if err != nil {
			t.Fatal(err)
		}
		var differ []string
		for _, id := range ids {
			if hf.wants(id) != innGot[id] {
				differ = append(differ, fmt.Sprintf("%s (INN %v)", id, innGot[id]))
			}
		}
		if len(differ) > 0 {
			t.Errorf("Q%s: %d of %d ids decided otherwise than INN, e.g. %v", e, len(differ), len(ids), differ[:min(3, len(differ))])
		}
	}
}
