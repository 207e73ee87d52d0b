package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/newsget/unpack/rartest"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestDownloadDirectUnpack: a RAR volume set downloaded on the command
// line is extracted during the download and its files renamed into place
// after it, byte for byte the archive's; with direct_unpack = false it
// is extracted after the download, to the same files.
func TestDownloadDirectUnpack(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	big, small := poster.RandomData(41, 90_000), poster.RandomData(42, 7_000)
	ps := postRARSet(t, s, []rartest.Entry{{Name: "big.bin", Data: big}, {Name: "small.txt", Data: small}}, 20_000, 6000, "rel.part%d.rar", "cli-du")
	dir := t.TempDir()
	nzb := filepath.Join(dir, "rel.nzb")
	if err := os.WriteFile(nzb, poster.NZB(ps...), 0o644); err != nil {
		t.Fatal(err)
	}
	off := filepath.Join(dir, "off.toml")
	if err := os.WriteFile(off, []byte("direct_unpack = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		direct bool
	}{
		{"on by default", nil, true},
		{"direct_unpack = false", []string{"-config", off}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"-q", "-server", "nntp://" + s.HostPort(), "-o", out}, tc.args...), nzb)
			if code := Main(args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			if got := strings.Contains(stdout.String(), "direct unpack: extracted during the download"); got != tc.direct {
				t.Errorf("direct unpack used %v, want %v:\n%s", got, tc.direct, stdout.String())
			}
			for n, want := range map[string][]byte{"big.bin": big, "small.txt": small} {
				got, err := os.ReadFile(filepath.Join(out, n))
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: %v (same contents %v)", n, err, bytes.Equal(got, want))
				}
			}
			if left, _ := filepath.Glob(filepath.Join(out, "*.rar")); len(left) > 0 {
				t.Errorf("volumes left: %v", left)
			}
		})
	}
}

// postRARSet stores on s, in alt.binaries.newsflow, a RAR 5 volume set of
// entries cut into volumes of volSize octets (named by nameFmt and the
// volume's number) and articles of partSize, and returns its postings.
func postRARSet(t *testing.T, s *nntptest.Server, entries []rartest.Entry, volSize, partSize int, nameFmt, idPrefix string) []poster.Posting {
	t.Helper()
	s.AddGroup(nntptest.Group{Name: "alt.binaries.newsflow"})
	var ps []poster.Posting
	for i, v := range rartest.WriteRAR5(entries, volSize) {
		p := poster.Posting{Name: fmt.Sprintf(nameFmt, i+1), Data: v, PartSize: partSize,
			Group: "alt.binaries.newsflow", IDPrefix: fmt.Sprintf("%s-%d", idPrefix, i)}
		for n := 1; n <= p.Parts(); n++ {
			if err := s.AddArticle(nntptest.Article{MessageID: p.MessageID(n), Raw: p.Article(n)}); err != nil {
				t.Fatal(err)
			}
		}
		ps = append(ps, p)
	}
	return ps
}
