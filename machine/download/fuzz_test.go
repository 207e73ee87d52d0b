package download

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/transcript"
)

// updateCorpus rewrites testdata/fuzz/FuzzFetch from the transcripts and
// the mixed pipeline:
//
//	go test ./machine/download/ -run TestFetchCorpus -update-corpus
var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzFetch")

// fuzzRequests are the requests every FuzzFetch run makes: message-ids of
// the transcripts and the mixed pipeline, one with a group.
var fuzzRequests = []Request{
	{Segment: Key{1, 1}, MessageID: "<p1@t>"},
	{Segment: Key{1, 2}, MessageID: "<p2@t>", Group: "alt.binaries.test"},
	{Segment: Key{1, 3}, MessageID: "<p3@t>"},
}

// fuzzRun feeds input to a Fetch with fuzzRequests in flight, cut at the
// given offsets, then EOF, and returns the events' summary, the decoded
// bytes, and whether Receive failed.
func fuzzRun(t *testing.T, input []byte, cuts ...int) ([]string, map[Key][]byte, bool) {
	l := newLogged(NewFetch(epoch, FetchConfig{Pipeline: len(fuzzRequests), User: "U", Pass: "P"}))
	for _, r := range fuzzRequests {
		if err := l.Request(epoch, r); err != nil {
			t.Fatal(err)
		}
	}
	failed := false
	prev := 0
	for _, c := range append(cuts, len(input)) {
		if c < prev || c > len(input) {
			continue
		}
		if !l.Closed() {
			if err := l.Receive(epoch, input[prev:c]); err != nil {
				failed = true
			}
		}
		l.AppendOutgoing(nil)
		prev = c
	}
	if !l.Closed() {
		l.ReceiveEOF(epoch)
	}
	return summarize(l.evs), l.bytes, failed
}

// FuzzFetch feeds arbitrary server bytes to a Fetch with three requests in
// flight. Properties: no panic; the same events and decoded bytes whether
// the input comes whole or cut in two; every request ends exactly once (a
// result, or pending in the final ConnClosed); Data offsets are not
// negative.
func FuzzFetch(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/fuzz/FuzzFetch/*")
	if len(seeds) == 0 {
		f.Fatal("no seed corpus files in testdata/fuzz/FuzzFetch")
	}
	for _, in := range fetchCorpus() {
		f.Add(in, uint16(len(in)/2))
	}
	f.Fuzz(func(t *testing.T, input []byte, cut uint16) {
		whole, wb, werr := fuzzRun(t, input)
		k := int(cut) % (len(input) + 1)
		split, sb, serr := fuzzRun(t, input, k)
		if diff := cmp.Diff(whole, split); diff != "" || werr != serr {
			t.Fatalf("cut at %d changes the events (error %v vs %v) (-whole +cut):\n%s", k, werr, serr, diff)
		}
		if diff := cmp.Diff(wb, sb); diff != "" {
			t.Fatalf("cut at %d changes the decoded bytes", k)
		}
		ended := map[Key]int{}
		for _, line := range whole {
			w := strings.Fields(line)
			switch w[0] {
			case "ok", "bad", "notfound", "failed":
				k, err := parseKey(strings.TrimSuffix(w[1], ":"))
				if err != nil {
					t.Fatal(err)
				}
				ended[k]++
			case "closed":
				for _, f := range w {
					if ks, ok := strings.CutPrefix(f, "pending="); ok {
						for _, s := range strings.Split(ks, ",") {
							k, _ := parseKey(s)
							ended[k]++
						}
					}
				}
			case "data":
				if strings.Contains(w[2], "-") {
					t.Fatalf("negative offset: %s", line)
				}
			}
		}
		for _, r := range fuzzRequests {
			if ended[r.Segment] != 1 {
				t.Fatalf("request %s ended %d times: %q", r.Segment, ended[r.Segment], whole)
			}
		}
	})
}

// fetchCorpus is the server side of every transcript in testdata and the
// mixed pipeline's input: real-world shapes for FuzzFetch.
func fetchCorpus() [][]byte {
	var out [][]byte
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		tr, err := transcript.ReadFile(os.DirFS("."), file)
		if err != nil {
			continue
		}
		var in []byte
		for _, e := range tr {
			if e.Kind == transcript.Data && e.Side == transcript.Server {
				in = append(in, e.Data...)
			}
		}
		out = append(out, in)
	}
	return append(out, mixedPipeline().input)
}

// TestFetchCorpus keeps testdata/fuzz/FuzzFetch in step with fetchCorpus
// (rewritten with -update-corpus) and runs the fuzz property on it.
func TestFetchCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzFetch")
	corpus := fetchCorpus()
	if *updateCorpus {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob("testdata/*.txt")
		names := make([]string, 0, len(corpus))
		for _, f := range files {
			names = append(names, strings.TrimSuffix(filepath.Base(f), ".txt"))
		}
		names = append(names, "mixed_pipeline")
		for i, in := range corpus {
			var b bytes.Buffer
			fmt.Fprintf(&b, "go test fuzz v1\n[]byte(%q)\nuint16(%d)\n", in, len(in)/2)
			if err := os.WriteFile(filepath.Join(dir, names[i]), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) < len(corpus) {
		t.Fatalf("%s has %d files, fetchCorpus %d: run with -update-corpus", dir, len(files), len(corpus))
	}
}
