package spoolfs

import (
	"hash/maphash"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestHistKey(t *testing.T) {
	seed := maphash.MakeSeed()
	tests := []struct {
		a, b string
		same bool
	}{
		{"<a@example.org>", "<a@example.org>", true},
		{"<a@Example.ORG>", "<a@example.org>", true},
		{"<a@EXAMPLE.ORG>", "<a@eXaMpLe.OrG>", true},
		{"<A@example.org>", "<a@example.org>", false},            // the local part is exact
		{"<\"x@Y\"@Example.org>", "<\"x@Y\"@example.org>", true}, // the domain follows the last "@"
		{"<\"x@Y\"@example.org>", "<\"x@y\"@example.org>", false},
		{"<a@ex\xc3\x84mple>", "<a@ex\xc3\xa4mple>", false}, // only ASCII folds
		{"<noat>", "<NOAT>", false},
		{"<a@[10.0.0.1]>", "<a@[10.0.0.1]>", true},
		{"<a@b>", "<a@bc>", false},
	}
	for _, tc := range tests {
		if got := histKey(tc.a) == histKey(tc.b); got != tc.same {
			t.Errorf("histKey(%q) == histKey(%q): %v, want %v", tc.a, tc.b, got, tc.same)
		}
		if got := idEqual([]byte(tc.a), tc.b); got != tc.same {
			t.Errorf("idEqual(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
		if tc.same && idHash(seed, tc.a) != idHash(seed, tc.b) {
			t.Errorf("idHash(%q) != idHash(%q)", tc.a, tc.b)
		}
		if idHash(seed, tc.a) != maphash.String(seed, histKey(tc.a)) {
			t.Errorf("idHash(%q) is not the hash of its key", tc.a)
		}
	}
}

// TestHistoryDomainCase: ids that differ only in the case of their domain
// are one article to the history (stored, then refused in every other
// spelling, also after a restart and before the log is written), the
// article keeps the spelling it arrived with, and a different local part
// is another article.
func TestHistoryDomainCase(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{})
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	h := s.History()
	if _, ok := h.Reserve("<r1@Example.org>", now); !ok {
		t.Fatal("first reservation refused")
	}
	if st, ok := h.Reserve("<r1@EXAMPLE.ORG>", now); ok || st != Reserved {
		t.Errorf("second spelling reserved: %v %v, want Reserved", st, ok)
	}
	tok := putT(t, s, "<r1@Example.org>", wireArticle("<r1@Example.org>", 200), now)
	for _, id := range []string{"<r1@example.org>", "<r1@EXAMPLE.ORG>", "<r1@eXample.Org>"} {
		if st := h.Status(id, now); st != Pending {
			t.Errorf("before Sync: Status(%s) = %v, want pending", id, st)
		}
		if _, err := s.Put(id, wireArticle(id, 200), now); err == nil {
			t.Errorf("Put(%s) of a stored id in another spelling succeeded", id)
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := s.Reject("<rj@Example.NET>", now); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, SpoolOptions{})
	defer s.Close()
	h = s.History()
	for id, want := range map[string]Status{
		"<r1@example.org>": Stored, "<r1@EXAMPLE.ORG>": Stored, "<R1@example.org>": Unknown,
		"<rj@example.net>": Rejected, "<RJ@example.net>": Unknown,
	} {
		if st := h.Status(id, now); st != want {
			t.Errorf("after restart: Status(%s) = %v, want %v", id, st, want)
		}
	}
	if e, ok := h.Lookup("<r1@EXAMPLE.org>"); !ok || e.Token != tok {
		t.Errorf("Lookup in another spelling = %v %v, want the stored token", e, ok)
	}
	if !s.Matches(tok, "<r1@Example.org>") {
		t.Error("the stored record does not keep the id as received")
	}
	if h.Len() != 2 {
		t.Errorf("Len = %d, want 2", h.Len())
	}
	// Forgotten in one spelling, it is gone in all.
	if err := s.Forget("<r1@EXAMPLE.ORG>"); err != nil {
		t.Fatal(err)
	}
	if st := h.Status("<r1@Example.org>", now); st != Unknown {
		t.Errorf("after Forget: Status = %v, want unknown", st)
	}
}

// TestHistoryDomainCaseOldLog opens a spool whose history log was written
// before domains were folded (testdata/history_case_v1: "<case1@Example.ORG>"
// and "<case1@example.org>" stored as two articles, "<Case2@example.org>"
// stored, "<rej@EXAMPLE.net>" rejected). Every record is read; the two
// spellings of case1 answer as one stored article, in any spelling.
func TestHistoryDomainCaseOldLog(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"history", "spool/00000001.seg"} {
		b, err := os.ReadFile(filepath.Join("testdata/history_case_v1", f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := openT(t, dir, SpoolOptions{})
	defer s.Close()
	h := s.History()
	now := time.Date(2026, 11, 28, 13, 0, 0, 0, time.UTC)
	for id, want := range map[string]Status{
		"<case1@Example.ORG>": Stored, "<case1@example.org>": Stored, "<case1@EXAMPLE.org>": Stored,
		"<Case1@example.org>": Unknown, "<Case2@EXAMPLE.ORG>": Stored, "<case2@example.org>": Unknown,
		"<rej@example.NET>": Rejected,
	} {
		if st := h.Status(id, now); st != want {
			t.Errorf("Status(%s) = %v, want %v", id, st, want)
		}
	}
	e, ok := h.Lookup("<case1@example.org>")
	if !ok {
		t.Fatal("case1 not found")
	}
	if a, err := s.Get(e.Token); err != nil || !s.Matches(e.Token, "<case1@Example.ORG>") {
		t.Errorf("case1 answers with %v (%d octets, %v), want the first one stored", e.Token, len(a), err)
	}
	if h.Len() != 3 {
		t.Errorf("Len = %d, want 3 (two spellings of case1 are one entry)", h.Len())
	}
}
