package testscripts

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/rogpeppe/go-internal/testscript"
)

// The posting commands live here, beside nntp_test.go's, and join its table.
func init() {
	nntpCommands["nntppost"] = cmdPost
	nntpCommands["nntpbodies"] = cmdBodies
}

// cmdPost posts every file of a directory (in name order) to a running
// server as yEnc articles, as a poster would (runtime/testpeer/poster),
// and writes their NZB:
//
//	nntppost [-server NAME] [-part BYTES] [-skip FILE:PART]... -nzb OUT DIR
//
// -skip leaves part PART of FILE off the server (an article lost). The
// message-ids are <FILE.partNofM@newsflow.test>.
func cmdPost(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! nntppost")
	}
	fs := newFlags(ts, "nntppost")
	name := fs.String("server", "", "in-script server name")
	part := fs.Int("part", 1000, "bytes per yEnc part")
	out := fs.String("nzb", "", "NZB file to write")
	var skips list
	fs.Var(&skips, "skip", "FILE:PART to leave off the server (repeatable)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 || *out == "" || *part <= 0 {
		ts.Fatalf("usage: nntppost [-server NAME] [-part BYTES] [-skip FILE:PART]... -nzb OUT DIR")
	}
	skip := map[string]bool{}
	for _, s := range skips {
		f, p, ok := strings.Cut(s, ":")
		if _, err := strconv.Atoi(p); !ok || err != nil {
			ts.Fatalf("nntppost: -skip %q: want FILE:PART", s)
		}
		skip[f+":"+p] = true
	}
	s := server(ts, *name)
	const group = "alt.binaries.newsflow"
	s.AddGroup(nntptest.Group{Name: group})
	des, err := os.ReadDir(ts.MkAbs(fs.Arg(0)))
	ts.Check(err)
	var posts []poster.Posting
	for _, de := range des {
		if !de.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(ts.MkAbs(fs.Arg(0)), de.Name()))
		ts.Check(err)
		p := poster.Posting{Name: de.Name(), Data: data, PartSize: *part, Group: group, IDPrefix: de.Name()}
		posts = append(posts, p)
		for n := 1; n <= p.Parts(); n++ {
			if skip[fmt.Sprintf("%s:%d", de.Name(), n)] {
				continue
			}
			ts.Check(s.AddArticle(nntptest.Article{MessageID: p.MessageID(n), Raw: p.Article(n)}))
		}
	}
	ts.Check(os.WriteFile(ts.MkAbs(*out), poster.NZB(posts...), 0o644))
}

// cmdBodies checks how many BODY commands a server received for the
// message-ids that contain a string:
//
//	nntpbodies [-server NAME] SUBSTRING COUNT
func cmdBodies(ts *testscript.TestScript, neg bool, args []string) {
	fs := newFlags(ts, "nntpbodies")
	name := fs.String("server", "", "in-script server name")
	if err := fs.Parse(args); err != nil || fs.NArg() != 2 {
		ts.Fatalf("usage: nntpbodies [-server NAME] SUBSTRING COUNT")
	}
	want, err := strconv.Atoi(fs.Arg(1))
	ts.Check(err)
	got := 0
	for _, c := range server(ts, *name).Commands() {
		if c.Cmd.Verb == "BODY" && len(c.Cmd.Args) > 0 && strings.Contains(c.Cmd.Args[0], fs.Arg(0)) {
			got++
		}
	}
	if (got == want) == neg {
		ts.Fatalf("nntpbodies: %d BODY commands for %q, want %s%d", got, fs.Arg(0), map[bool]string{true: "other than "}[neg], want)
	}
}
