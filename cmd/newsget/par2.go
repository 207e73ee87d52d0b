package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/newsflow/newsflow/runtime/newsget/parity"
)

// par2Main runs "newsget par2 verify|repair FILE.par2". Exit status: 0
// when every file is whole (after repair, for repair); 1 when files are
// damaged (verify) or cannot be repaired (repair); 2 for a usage mistake
// or a set that cannot be read.
func par2Main(args []string, stdout, stderr io.Writer) int {
	usage := func() int {
		fmt.Fprintln(stderr, "usage: newsget par2 verify|repair [-j WORKERS] FILE.par2")
		return 2
	}
	if len(args) == 0 || (args[0] != "verify" && args[0] != "repair") {
		return usage()
	}
	cmd := args[0]
	fs := flag.NewFlagSet("newsget par2 "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	workers := fs.Int("j", 0, "worker goroutines (default: one per core)")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 1 {
		return usage()
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	set, err := parity.Open(ctx, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "newsget: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "%s: %d files, %d slices of %d bytes, %d recovery slices in %d volumes",
		fs.Arg(0), len(set.Files), set.Slices, set.SliceSize, len(set.Recovery), len(set.Volumes))
	if set.BadPackets > 0 {
		fmt.Fprintf(stdout, " (%d damaged packets skipped)", set.BadPackets)
	}
	fmt.Fprintln(stdout)
	o := parity.Options{Workers: *workers}
	rep, err := set.Verify(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "newsget: %v\n", err)
		return 2
	}
	printPar2Report(stdout, set, rep)
	if rep.Whole() {
		return 0
	}
	enough := len(rep.Missing) <= len(set.Recovery)
	if cmd == "verify" {
		if enough {
			fmt.Fprintf(stdout, "repair possible: %d slices to rebuild, %d recovery slices\n", len(rep.Missing), len(set.Recovery))
		} else {
			fmt.Fprintf(stdout, "repair not possible: %d slices to rebuild, %d recovery slices (%d more needed)\n", len(rep.Missing), len(set.Recovery), len(rep.Missing)-len(set.Recovery))
		}
		return 1
	}
	if _, err := set.Repair(ctx, rep, o); err != nil {
		fmt.Fprintf(stderr, "newsget: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "repaired: %d slices rebuilt; every file matches its MD5\n", len(rep.Missing))
	return 0
}

// printPar2Report prints one line per file that is not simply whole, then
// a total.
func printPar2Report(w io.Writer, set *parity.Set, rep *parity.Report) {
	for i, f := range rep.Files {
		if f.RenamedFrom != "" {
			fmt.Fprintf(w, "  %s: found as %s, renamed\n", f.Name, f.RenamedFrom)
		}
		switch {
		case f.Missing:
			fmt.Fprintf(w, "  %s: missing (%d slices)\n", f.Name, len(set.Files[i].Slices))
		case len(f.Damaged) > 0:
			fmt.Fprintf(w, "  %s: damaged, %d of %d slices\n", f.Name, len(f.Damaged), len(set.Files[i].Slices))
		case f.TooLong:
			fmt.Fprintf(w, "  %s: longer than the set says\n", f.Name)
		}
	}
	state := "all files whole"
	if !rep.Whole() {
		state = fmt.Sprintf("%d slices missing or damaged", len(rep.Missing))
	}
	fmt.Fprintf(w, "verified: %s (read %d bytes", state, rep.Read)
	if rep.Quick > 0 {
		fmt.Fprintf(w, "; %d files confirmed from download CRCs without reading", rep.Quick)
	}
	fmt.Fprintln(w, ")")
}
