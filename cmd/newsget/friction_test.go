package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestFriction: what a new user meets first says what is wrong and what
// to do.
func TestFriction(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Auth: &nntptest.Auth{User: "u", Pass: "p", Required: true}})
	s.AddGroup(nntptest.Group{Name: "alt.binaries.newsflow"})
	p := poster.Posting{Name: "f.bin", Data: poster.RandomData(9, 3000), PartSize: 3000, Group: "alt.binaries.newsflow", IDPrefix: "friction"}
	s.AddArticle(nntptest.Article{MessageID: p.MessageID(1), Raw: p.Article(1)})
	dir := t.TempDir()
	nzb := filepath.Join(dir, "f.nzb")
	os.WriteFile(nzb, poster.NZB(p), 0o644)
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o644)

	t.Run("-q silences the log; 480 without credentials is said at once", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		Main([]string{"-q", "-server", "nntp://" + s.HostPort(), "-o", filepath.Join(dir, "out"), nzb}, &stdout, &stderr)
		if stderr.Len() != 0 {
			t.Errorf("stderr with -q:\n%s", stderr.String())
		}
		want := `(?m)^server given up: .*requires authentication \(480\) and no username/password is configured`
		if !regexp.MustCompile(want).MatchString(stdout.String()) {
			t.Errorf("stdout does not match %s:\n%s", want, stdout.String())
		}
	})
	t.Run("the newsget: prefix once", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := Main([]string{"-q", "-server", "nntp://" + s.HostPort(), "-o", filepath.Join(notDir, "out"), nzb}, &stdout, &stderr)
		if code != 2 || !strings.HasPrefix(stderr.String(), "newsget: ") || strings.Contains(stderr.String(), "newsget: newsget:") {
			t.Errorf("exit %d, stderr %q: want 2 and one newsget: prefix", code, stderr.String())
		}
	})
}
