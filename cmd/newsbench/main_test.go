package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestRunUnknownAndUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(nil, &out, &errb); code != 2 {
		t.Errorf("no args: exit %d; want 2", code)
	}
	if code := run([]string{"nosuch"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown comparison "nosuch"`) {
		t.Errorf("unknown: exit %d, stderr %q", code, errb.String())
	}
}

func TestRatioAndTable(t *testing.T) {
	var b bytes.Buffer
	Ratio(&b, "feed-2k-1peer", "art_per_s", 86000, 43000)
	Ratio(&b, "x", "y", 1, 0)
	if got, want := b.String(), "ratio feed-2k-1peer art_per_s 2.000\nratio x y nan\n"; got != want {
		t.Errorf("got %q; want %q", got, want)
	}
	tb := Table{Header: []string{"case", "art/s"}}
	tb.Add("feed", "1")
	b.Reset()
	tb.Print(&b)
	if got, want := b.String(), "case  art/s\nfeed  1\n"; got != want {
		t.Errorf("got %q; want %q", got, want)
	}
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("Median = %v", m)
	}
}

func TestRegisterRuns(t *testing.T) {
	called := false
	register("selftest", "test only", func(args []string, stdout, stderr io.Writer) error {
		called = len(args) == 1 && args[0] == "-x"
		return nil
	})
	defer delete(subcommands, "selftest")
	if code := run([]string{"selftest", "-x"}, io.Discard, io.Discard); code != 0 || !called {
		t.Errorf("exit %d, called %v", code, called)
	}
}
