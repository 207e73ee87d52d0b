package postproc

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

func nzbOfPosts(f *fixture) []byte { return poster.NZB(f.posts...) }

// bodiesSince lists the message-ids of the BODY commands the fixture's
// server got from the mark on.
func (f *fixture) bodiesSince(mark int) []string {
	var out []string
	for _, c := range f.srv.Commands()[mark:] {
		if c.Cmd.Verb == "BODY" && len(c.Cmd.Args) > 0 {
			out = append(out, c.Cmd.Args[0])
		}
	}
	slices.Sort(out)
	return out
}

// obfuscated posts data files under random names, PAR2 files as named.
func obfuscated(n string) string {
	if strings.HasSuffix(n, ".par2") {
		return n
	}
	return "x" + strings.NewReplacer(".", "", "0", "q").Replace(n) + "r7"
}

// TestServeRetryAfterUnpack: an encrypted 7z job posted under obfuscated
// names, added without its password, fails in the unpack (ENCRYPTED /,
// the reason saying so) after verify renamed its volumes; mode=retry with
// the password goes straight to post-processing: nothing is downloaded
// again and the job completes.
func TestServeRetryAfterUnpack(t *testing.T) {
	sevenZip := sevenZipTool(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "movie.mkv"), []byte(strings.Repeat("frame ", 5000)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sevenZip, "a", "-mx0", "-v12000b", "-psecret", "movie.7z", "movie.mkv")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", sevenZip, err, out)
	}
	vols, _ := filepath.Glob(filepath.Join(work, "movie.7z.*"))
	data := map[string][]byte{}
	for _, v := range vols {
		b, err := os.ReadFile(v)
		if err != nil {
			t.Fatal(err)
		}
		data[filepath.Base(v)] = b
	}
	f := newFixture(t, data, 4, obfuscated, nil)
	sd := startServe(t, f.srv)
	got := sd.call(t, url.Values{"mode": {"addfile"}}, nzbOfPosts(f), "Movie.nzb")
	id := got["nzo_ids"].([]any)[0].(string)
	h := sd.history(t, id)
	if h["status"] != "Failed" || h["name"] != "ENCRYPTED / Movie" || !strings.Contains(h["fail_message"].(string), "encrypted") {
		t.Fatalf("history = %v", h)
	}
	mark := len(f.srv.Commands())
	if r := sd.call(t, url.Values{"mode": {"retry"}, "value": {id}, "password": {"secret"}}, nil, ""); r["status"] != true {
		t.Fatalf("retry = %v", r)
	}
	h = sd.history(t, id)
	if h["status"] != "Completed" || h["name"] != "Movie" {
		t.Fatalf("after retry: %v", h)
	}
	if b := f.bodiesSince(mark); len(b) != 0 {
		t.Errorf("the retry downloaded %v, want nothing", b)
	}
	got2, err := os.ReadFile(filepath.Join(h["storage"].(string), "movie.mkv"))
	if err != nil || string(got2) != strings.Repeat("frame ", 5000) {
		t.Errorf("movie.mkv: %v", err)
	}
}

// TestServeRetryAfterRepair: a job posted under obfuscated names whose
// repair fails (the recovery volumes are not on the server yet) fails
// with the repair's reason; once the articles are there, mode=retry
// fetches only the articles the job lacks (no file under its obfuscated
// name again) and the job completes, every file whole.
func TestServeRetryAfterRepair(t *testing.T) {
	lost := func(name string, part int) bool {
		return name == "a.bin" && part == 2 || strings.Contains(name, ".vol")
	}
	f := newFixture(t, twoFiles(), 4, obfuscated, lost)
	sd := startServe(t, f.srv)
	got := sd.call(t, url.Values{"mode": {"addfile"}}, nzbOfPosts(f), "Two.nzb")
	id := got["nzo_ids"].([]any)[0].(string)
	h := sd.history(t, id)
	if h["status"] != "Failed" || !strings.Contains(h["fail_message"].(string), "repair of set.par2") {
		t.Fatalf("history = %v", h)
	}
	var want []string
	for _, p := range f.posts {
		for k := 1; k <= p.Parts(); k++ {
			if strings.Contains(p.Name, ".vol") || (p.Name == obfuscated("a.bin") && k == 2) {
				if err := f.srv.AddArticle(nntptest.Article{MessageID: p.MessageID(k), Raw: p.Article(k)}); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(p.Name, ".vol") {
					want = append(want, p.MessageID(k))
				}
			}
		}
	}
	mark := len(f.srv.Commands())
	if r := sd.call(t, url.Values{"mode": {"retry"}, "value": {id}}, nil, ""); r["status"] != true {
		t.Fatalf("retry = %v", r)
	}
	h = sd.history(t, id)
	if h["status"] != "Completed" {
		t.Fatalf("after retry: %v", h)
	}
	if got := f.bodiesSince(mark); !slices.Equal(got, want) {
		t.Errorf("the retry downloaded %v, want only %v", got, want)
	}
	for n, b := range f.orig {
		got, err := os.ReadFile(filepath.Join(h["storage"].(string), n))
		if err != nil || string(got) != string(b) {
			t.Errorf("%s: %v (same %v)", n, err, string(got) == string(b))
		}
	}
}
