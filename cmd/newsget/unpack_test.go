package main

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestDownloadUnpack: a complete download whose files are a zip and a
// PAR2 file is unpacked, and the zip and PAR2 file removed; with
// -no-cleanup they stay; an archive that cannot be unpacked (an entry
// that would leave the folder) leaves everything in place and exits 1.
func TestDownloadUnpack(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	s.AddGroup(nntptest.Group{Name: "alt.binaries.newsflow"})
	content := poster.RandomData(7, 7000)
	post := func(prefix, name string, data []byte) poster.Posting {
		p := poster.Posting{Name: name, Data: data, PartSize: 3000, Group: "alt.binaries.newsflow", IDPrefix: prefix}
		for n := 1; n <= p.Parts(); n++ {
			if err := s.AddArticle(nntptest.Article{MessageID: p.MessageID(n), Raw: p.Article(n)}); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	zipOf := func(name string) []byte {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		w, _ := zw.Create(name)
		w.Write(content)
		zw.Close()
		return b.Bytes()
	}
	good := poster.NZB(post("good", "show.zip", zipOf("show/episode.bin")), post("goodpar", "show.par2", []byte("PAR2 index stand-in")))
	evil := poster.NZB(post("evil", "evil.zip", zipOf("../escape.bin")), post("evilpar", "evil.par2", []byte("PAR2 index stand-in")))
	dir := t.TempDir()
	nzb := func(name string, data []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	url := "nntp://" + s.HostPort()
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		out   string
		files []string
	}{
		{"unpack and clean up", []string{nzb("good.nzb", good)}, 0,
			`(?m)^unpacked: show.zip \(1 volume\): 1 file, 7000 bytes\n  show/episode.bin\nremoved: show.zip, show.par2$`,
			[]string{"show/episode.bin"}},
		{"no cleanup", []string{"-no-cleanup", nzb("good2.nzb", good)}, 0,
			`(?m)^unpacked: show.zip`, []string{"show.par2", "show.zip", "show/episode.bin"}},
		{"no unpack", []string{"-no-unpack", nzb("good3.nzb", good)}, 0,
			`^complete: show.zip`, []string{"show.par2", "show.zip"}},
		{"entry escaping the folder", []string{nzb("evil.nzb", evil)}, 1,
			`(?m)^unpack failed: unpack evil.zip: entry "../escape.bin": ".." would leave the output folder; refused; archives left in place$`,
			[]string{"evil.par2", "evil.zip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+regexp.MustCompile(`\W`).ReplaceAllString(tc.name, "_"))
			var stdout, stderr bytes.Buffer
			code := Main(append([]string{"-q", "-server", url, "-o", out}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout.String(), stderr.String())
			}
			if !regexp.MustCompile(tc.out).MatchString(stdout.String()) {
				t.Errorf("stdout does not match %s:\n%s", tc.out, stdout.String())
			}
			var got []string
			filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && d.Name()[0] != '.' && filepath.Base(filepath.Dir(p)) != ".newsget" {
					rel, _ := filepath.Rel(out, p)
					got = append(got, filepath.ToSlash(rel))
				}
				if d != nil && d.IsDir() && d.Name() == ".newsget" {
					return filepath.SkipDir
				}
				return nil
			})
			sort.Strings(got)
			if diff := cmp.Diff(tc.files, got); diff != "" {
				t.Errorf("files in the download folder (-want +got):\n%s", diff)
			}
			if _, err := os.Stat(filepath.Join(dir, "escape.bin")); err == nil {
				t.Fatalf("%s: escape.bin written outside the download folder", tc.name)
			}
		})
	}
	t.Run("a re-run after cleanup fetches nothing", func(t *testing.T) {
		bodies := s.Count("BODY")
		var stdout, stderr bytes.Buffer
		out := filepath.Join(dir, "out-unpack_and_clean_up")
		code := Main([]string{"-q", "-server", url, "-o", out, filepath.Join(dir, "good.nzb")}, &stdout, &stderr)
		want := `(?m)^already complete: show.zip \(\d+ bytes; unpacked and removed\)\nalready complete: show.par2 \(\d+ bytes; unpacked and removed\)$`
		if code != 0 || !regexp.MustCompile(want).MatchString(stdout.String()) {
			t.Errorf("exit %d, want 0; stdout does not match %s:\n%s%s", code, want, stdout.String(), stderr.String())
		}
		if n := s.Count("BODY") - bodies; n != 0 {
			t.Errorf("%d BODY commands; want none", n)
		}
	})
}

// TestJobPassword: the NZB's <meta type="password"> wins, then
// {{password}} in the NZB's name.
func TestJobPassword(t *testing.T) {
	withMeta := []byte(`<?xml version="1.0"?><nzb xmlns="http://www.newzbin.com/DTD/2003/nzb"><head><meta type="password">from meta</meta></head>` +
		`<file subject="x"><groups><group>a.b</group></groups><segments><segment number="1" bytes="1">a@b</segment></segments></file></nzb>`)
	without := bytes.Replace(withMeta, []byte(`<meta type="password">from meta</meta>`), nil, 1)
	for _, tc := range []struct {
		name string
		nzb  []byte
		want string
	}{
		{"plain.nzb", withMeta, "from meta"},
		{"Show{{from name}}.nzb", withMeta, "from meta"},
		{"Show{{from name}}.nzb", without, "from name"},
		{"plain.nzb", without, ""},
	} {
		if got := jobPassword(newsget.Job{Name: tc.name, NZB: tc.nzb}); got != tc.want {
			t.Errorf("jobPassword(%s, meta=%v) = %q, want %q", tc.name, bytes.Contains(tc.nzb, []byte("meta")), got, tc.want)
		}
	}
}
