package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestUsageListsSubcommands: newsget -h names every subcommand.
func TestUsageListsSubcommands(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, sub := range []string{"newsget serve", "newsget unpack", "newsget par2", "newsget config", "-version"} {
		if !strings.Contains(stderr.String(), sub) {
			t.Errorf("newsget -h does not name %q:\n%s", sub, stderr.String())
		}
	}
}

// TestProgressTerm: a log line written while the bar is shown clears the
// bar's line, stands on a line of its own, and the bar is drawn again
// after it; nothing of the two shares a line.
func TestProgressTerm(t *testing.T) {
	var b bytes.Buffer
	term := &progressTerm{w: &b}
	term.draw("[###---] 50%")
	fmt.Fprintf(term, "level=WARN msg=\"server slow\"\n")
	term.draw("[####--] 66%")
	term.draw("")
	fmt.Fprintf(term, "after\n")
	want := "\r\033[K[###---] 50%" + "\r\033[Klevel=WARN msg=\"server slow\"\n[###---] 50%" + "\r\033[K[####--] 66%" + "\r\033[K" + "after\n"
	if b.String() != want {
		t.Errorf("terminal:\n got %q\nwant %q", b.String(), want)
	}
}

// TestIncompleteToBeRepaired: an incomplete file of a job with a whole
// PAR2 index says it goes to repair; one without says nothing more.
func TestIncompleteToBeRepaired(t *testing.T) {
	var b bytes.Buffer
	printSummary(&b, &newsget.Summary{Files: []*newsget.FileResult{
		{Job: "a.nzb", Name: "set.par2", Complete: true, Size: 100},
		{Job: "a.nzb", Name: "a.bin.part", Err: "1 of 3 segments missing on every server"},
		{Job: "b.nzb", Name: "b.bin.part", Err: "1 of 3 segments missing on every server"},
	}})
	for _, want := range []string{
		"incomplete: a.bin.part: 1 of 3 segments missing on every server; to be repaired from its PAR2 set\n",
		"incomplete: b.bin.part: 1 of 3 segments missing on every server\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

// TestInterruptExits130: SIGINT during a download ends newsget with 130
// (128 + SIGINT, as shells report it), not 2 (a configuration mistake),
// saying the same command resumes.
func TestInterruptExits130(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := poster.Posting{Name: "slow.bin", Data: poster.RandomData(5, 200_000), PartSize: 4000, Group: "alt.binaries.newsflow", IDPrefix: "int"}
	s.AddGroup(nntptest.Group{Name: "alt.binaries.newsflow"})
	for n := 1; n <= p.Parts(); n++ {
		s.AddArticle(nntptest.Article{MessageID: p.MessageID(n), Raw: p.Article(n)})
	}
	s.AddFault(nntptest.Fault{Cmd: "BODY", Delay: 50 * time.Millisecond})
	dir := t.TempDir()
	nzb := filepath.Join(dir, "slow.nzb")
	os.WriteFile(nzb, poster.NZB(p), 0o644)
	cmd := child(t, "-server", fmt.Sprintf("nntp://%s?connections=1", s.HostPort()), "-o", filepath.Join(dir, "out"), nzb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the download is under way (a BODY was asked for).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		started := false
		for _, c := range s.Commands() {
			started = started || c.Cmd.Verb == "BODY"
		}
		if started {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the download never started")
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("exit %d, want 130; stderr:\n%s", code, stderr.String())
	}
}
