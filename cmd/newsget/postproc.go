package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/newsflow/newsflow/machine/volumes"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/newsget/postproc"
)

// postOptions are the post-processing switches of the command line and
// the config.
type postOptions struct {
	unpack, cleanup bool
	maxRatio        int // unpack_max_ratio
}

// postprocessJobs runs the post-processing stage on every job of the
// download and reports whether each ended whole (and unpacked). A job
// with an incomplete file and no PAR2 set among its files has nothing to
// repair with: it is left as the download left it (exit 1), as before.
//
// names are the NZB files of the jobs, read again here (only for a job
// that is post-processed) rather than kept in memory through the download.
func postprocessJobs(ctx context.Context, cfg *newsget.Config, engOpts newsget.Options, names []string, sum *newsget.Summary,
	pp postOptions, direct directUnpacks, stdout, stderr io.Writer) bool {
	ok := true
	fetch := postproc.EngineFetch(cfg, engOpts)
	for _, name := range names {
		j := newsget.Job{Name: name, HoldRecovery: true}
		var files []*newsget.FileResult
		whole, sets := true, false
		for _, f := range sum.Files {
			if f.Job != j.Name {
				continue
			}
			files = append(files, f)
			whole = whole && (f.Complete || f.Held)
			if p, isPar2 := volumes.ParsePar2Name(f.Name); isPar2 && p.Index && f.Complete {
				sets = true
			}
		}
		if len(files) == 0 {
			continue // refused as a whole
		}
		if !whole && !sets {
			ok = false
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			printErr(stderr, err)
			ok = false
			continue
		}
		j.NZB = data
		res := postproc.Run(ctx, postproc.Job{Dir: cfg.DownloadDir, Name: j.Name, Password: jobPassword(j), Files: files, Direct: direct.take(name)},
			postproc.Options{Fetch: fetch, Unpack: pp.unpack, Cleanup: pp.cleanup, UnpackMaxRatio: pp.maxRatio, Log: engOpts.Log})
		printPost(stdout, res)
		if res.Err == nil && res.Settled {
			// Repaired whole: a later run of this NZB finds it finished.
			if err := newsget.SettleJob(cfg, j, files); err != nil {
				printErr(stderr, err)
			}
		} else if res.Unpack != nil && len(res.Unpack.Removed) > 0 {
			// A later run of this NZB must not fetch them again.
			if err := newsget.MarkRemoved(cfg, j, res.Unpack.Removed); err != nil {
				printErr(stderr, err)
			}
		}
		ok = ok && res.Err == nil
	}
	return ok
}

// printPost writes what post-processing did: verified:, renamed:,
// fetched recovery:, repaired:, then unpacked: and removed:, or why it
// failed.
func printPost(w io.Writer, res *postproc.Result) {
	for _, v := range res.Verified {
		if v.Unreadable != "" {
			fmt.Fprintf(w, "verified: %s: not a readable PAR2 set (%s); every file checked by its yEnc CRCs\n", v.Set, v.Unreadable)
			continue
		}
		if v.Whole == v.Files && v.Quick == v.Files && v.Read == 0 {
			fmt.Fprintf(w, "verified: %s: %d files whole (quick check from download CRCs, no file read)\n", v.Set, v.Files)
			continue
		}
		fmt.Fprintf(w, "verified: %s: %d of %d files whole, %d slices to rebuild (%d files from download CRCs, %s read)\n",
			v.Set, v.Whole, v.Files, v.Missing, v.Quick, newsget.FormatBytes(v.Read))
	}
	for _, r := range res.Renamed {
		fmt.Fprintf(w, "renamed: %s -> %s\n", r.From, r.To)
	}
	if len(res.Fetched) > 0 {
		blocks, vols := res.FetchedBlocks()
		var names []string
		for _, f := range res.Fetched {
			if f.Err != "" {
				fmt.Fprintf(w, "fetch failed: %s: %s\n", f.Name, f.Err)
				continue
			}
			names = append(names, f.Name)
		}
		fmt.Fprintf(w, "fetched recovery: %s in %s (%s): %s\n", plural(blocks, "block"), plural(vols, "volume"), newsget.FormatBytes(res.Received), strings.Join(names, ", "))
	}
	for _, r := range res.Repaired {
		fmt.Fprintf(w, "repaired: %s (%d slices)\n", r.Name, r.Slices)
	}
	switch {
	case res.Direct == "used":
		fmt.Fprintln(w, "direct unpack: extracted during the download")
	case res.Direct != "":
		fmt.Fprintf(w, "direct unpack: not used (%s); extracted after the download\n", res.Direct)
	}
	if res.Unpack != nil {
		printUnpack(w, res.Unpack)
	}
	if res.Err != nil && (res.Unpack == nil || res.Unpack.OK()) {
		fmt.Fprintf(w, "post-processing failed: %v; files left in place\n", res.Err)
	}
}
