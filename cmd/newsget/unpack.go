package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/newsget/unpack"
)

// unpackMain is `newsget unpack [-password PW] [-no-cleanup] [-max-ratio N] DIR`: unpack
// the archives found in DIR as after a download, and remove them and the
// PAR2 files when every one unpacked and verified.
func unpackMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsget unpack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	password := fs.String("password", "", "password of encrypted archives")
	noCleanup := fs.Bool("no-cleanup", false, "keep the archives and PAR2 files after unpacking")
	maxRatio := fs.Int("max-ratio", unpack.DefaultMaxRatio, "refuse an archive that unpacks to more than `N` times its volumes (at least 64 MiB)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: newsget unpack [-password PW] [-no-cleanup] [-max-ratio N] DIR")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	res, err := unpack.Dir(ctx, fs.Arg(0), unpack.Options{Password: *password, Cleanup: !*noCleanup, MaxRatio: *maxRatio})
	if res != nil {
		printUnpack(stdout, res)
	}
	if err != nil {
		fmt.Fprintf(stderr, "newsget: %v\n", err)
		return 2
	}
	if len(res.Archives) == 0 {
		fmt.Fprintf(stdout, "unpack: no archive in %s\n", fs.Arg(0))
	}
	if !res.OK() {
		return 1
	}
	return 0
}

// jobPassword is the archive password a job carries, if any.
func jobPassword(j newsget.Job) string {
	if nzb, err := proto.ParseNZB(bytes.NewReader(j.NZB), proto.NZBLimits{}); err == nil {
		if pw, ok := nzb.MetaValue("password"); ok && pw != "" {
			return pw
		}
	}
	pw, _ := unpack.PasswordFromName(j.Name)
	return pw
}

// plural is n and the word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// printUnpack writes what an unpack did: one line per archive (and its
// files), then what cleanup removed.
func printUnpack(w io.Writer, res *unpack.Result) {
	for _, a := range res.Archives {
		if a.Err != nil {
			fmt.Fprintf(w, "unpack failed: %v; archives left in place\n", a.Err)
			continue
		}
		fmt.Fprintf(w, "unpacked: %s (%s): %s, %d bytes\n", a.Name, plural(len(a.Volumes), "volume"), plural(len(a.Files), "file"), a.Bytes)
		present := map[string]bool{}
		for _, p := range a.Present {
			present[p] = true
		}
		for _, f := range a.Files {
			if present[f] {
				fmt.Fprintf(w, "  %s (already there, same contents)\n", f)
			} else {
				fmt.Fprintf(w, "  %s\n", f)
			}
		}
		for _, f := range a.Skipped {
			fmt.Fprintf(w, "  %s (link, skipped)\n", f)
		}
	}
	if len(res.Removed) > 0 {
		fmt.Fprintf(w, "removed: %s\n", strings.Join(res.Removed, ", "))
	}
}
