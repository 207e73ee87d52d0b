package newsweb

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A reader's marks survive a restart: the server closed writes them, a
// new server on the same file reads them back, and the group page shows
// the thread new again as before the restart.
func TestVisitsRestart(t *testing.T) {
	s0 := loginSite(t, map[string]string{"dora": "secret"}, PostingOptions{})
	file := filepath.Join(t.TempDir(), "state", "visits")
	opts := Options{Posting: s0.h.posting, VisitsFile: file}
	a := startSiteWith(t, s0.news, opts, s0.news.HostPort())
	c := loginCookie(t, a)
	group, thread := a.url+"/groups/misc.test", a.url+"/groups/misc.test/threads/m1@t"
	getCookie(t, thread, c) // seen
	lastVisit := time.Date(2024, 1, 1, 12, 30, 0, 0, time.UTC)
	a.h.visits.setSeen(t, "dora", "<m1@t>", lastVisit)
	a.h.visits.see("dora", []string{"<other@t>"}, []time.Time{lastVisit.Add(time.Nanosecond)})
	if _, page := getCookie(t, group, c); !strings.Contains(page, `<span class="new">1 new</span>`) {
		t.Fatalf("before the restart: no \"1 new\":\n%s", page)
	}
	if err := a.h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.h.Close(); err != nil { // twice is harmless
		t.Fatal(err)
	}

	b := startSiteWith(t, s0.news, opts, s0.news.HostPort())
	t.Cleanup(func() { b.h.Close() })
	for root, want := range map[string]time.Time{"<m1@t>": lastVisit, "<other@t>": lastVisit.Add(time.Nanosecond)} {
		if got, ok := b.h.visits.seen("dora", root); !ok || !got.Equal(want) {
			t.Errorf("after the restart: %s seen %v %v, want %v", root, got, ok, want)
		}
	}
	if _, page := getCookie(t, b.url+"/groups/misc.test", c); !strings.Contains(page, `<span class="new">1 new</span>`) {
		t.Errorf("after the restart: no \"1 new\":\n%s", page)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("visits file: %v %v, want mode 0600", st, err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".*tmp*")); len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}
}

// A damaged visits file loads what it can: a line with a bad checksum,
// an overlong line and a cut last line are skipped, the report names the
// file, and the lines around them are loaded.
func TestVisitsFileDamaged(t *testing.T) {
	t0 := time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC)
	good := func(user, root string) []byte { return appendVisitLine(nil, user, root, t0) }
	flipped := good("ann", "<x@t>")
	flipped[1] ^= 0x20
	for _, tc := range []struct {
		name   string
		file   []byte
		loaded []string // user root, in file order
		report string
	}{
		{"intact", slices.Concat(good("ann", "<1@t>"), good("bob", "<2@t>")), []string{"ann <1@t>", "bob <2@t>"}, ""},
		{"the last line cut", slices.Concat(good("ann", "<1@t>"), good("bob", "<2@t>"), good("cy", "<3@t>")[:10]),
			[]string{"ann <1@t>", "bob <2@t>"}, "1 damaged line(s) skipped (first: line 3)"},
		{"a flipped byte", slices.Concat(good("ann", "<1@t>"), flipped, good("bob", "<2@t>")),
			[]string{"ann <1@t>", "bob <2@t>"}, "1 damaged line(s) skipped (first: line 2)"},
		{"an overlong line", slices.Concat(good("ann", "<1@t>"), []byte(strings.Repeat("x", 3*maxVisitLine)+"\n"), good("bob", "<2@t>")),
			[]string{"ann <1@t>", "bob <2@t>"}, "1 damaged line(s) skipped (first: line 2)"},
		{"empty", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "visits")
			os.WriteFile(path, tc.file, 0o600)
			v := newVisits()
			report, err := v.load(path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.report == "" && report != "" || tc.report != "" && report != path+": "+tc.report+"; the other visits are loaded" {
				t.Errorf("report %q, want %q", report, tc.report)
			}
			var got []string
			for _, l := range strings.SplitAfter(string(must(v.marshal())), "\n") {
				if user, root, seen, ok := parseVisitLine([]byte(l)); ok {
					got = append(got, user+" "+root)
					if !seen.Equal(t0) {
						t.Errorf("%s %s seen %v, want %v", user, root, seen, t0)
					}
				}
			}
			if d := cmp.Diff(tc.loaded, got); d != "" {
				t.Errorf("loaded (-want +got):\n%s", d)
			}
		})
	}
	v := newVisits()
	if _, err := v.load(filepath.Join(t.TempDir(), "missing")); err != nil {
		t.Errorf("a missing file: %v", err)
	}
}

func must(b []byte, _ uint64) []byte { return b }

// The file keeps the bounds and the orders: written and read back, the
// record is the same, and what a reader cannot store (a TAB in the name)
// is left out.
func TestVisitsFileRoundTrip(t *testing.T) {
	v := newVisits()
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		v.see(fmt.Sprint("u", i), []string{"<a@t>", "<b@t>"}, []time.Time{t0.Add(time.Duration(i)), t0})
	}
	v.see("tab\tuser", []string{"<c@t>"}, []time.Time{t0})
	v.see("u2", []string{"<a@t>"}, []time.Time{t0})
	path := filepath.Join(t.TempDir(), "visits")
	if err := v.save(path); err != nil {
		t.Fatal(err)
	}
	w := newVisits()
	if _, err := w.load(path); err != nil {
		t.Fatal(err)
	}
	want, _ := v.marshal()
	got, _ := w.marshal()
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	if strings.Contains(string(got), "tab") {
		t.Errorf("a user name with a TAB was written")
	}
	// Unchanged, it is not written again.
	os.Remove(path)
	if err := w.save(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("an unchanged record was written: %v", err)
	}
}

// FuzzVisitLine: a line reads back as written (fields that can be
// stored), a flipped byte is noticed, and no input panics the parser.
func FuzzVisitLine(f *testing.F) {
	f.Add("dora", "<m1@t>", int64(1700000000), int64(5), []byte("x\ty\t1\t2\t00000000\n"))
	f.Fuzz(func(t *testing.T, user, root string, sec, nsec int64, junk []byte) {
		if u, r, _, ok := parseVisitLine(junk); ok && (!storable(u) || !storable(r)) {
			t.Fatalf("parseVisitLine(%q) = %q %q", junk, u, r)
		}
		if !storable(user) || !storable(root) || nsec < 0 || nsec >= 1e9 {
			return
		}
		seen := time.Unix(sec, nsec).UTC()
		line := appendVisitLine(nil, user, root, seen)
		u, r, s, ok := parseVisitLine(line)
		if !ok || u != user || r != root || !s.Equal(seen) {
			t.Fatalf("%q reads back as %q %q %v %v", line, u, r, s, ok)
		}
		for i := range line[:len(line)-1] {
			bad := slices.Clone(line)
			bad[i] ^= 0x20
			if u2, r2, s2, ok := parseVisitLine(bad); ok && (u2 != u || r2 != r || !s2.Equal(s)) {
				t.Fatalf("flipping byte %d of %q passed", i, line)
			}
		}
	})
}
