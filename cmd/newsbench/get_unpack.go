package main

// newsbench get-unpack: newsget serve's download and post-processing of a
// RAR volume release with direct unpack against without it, from a
// runtime/testpeer/nntptest server on loopback. The release is random
// (incompressible) data stored in a RAR 5 volume set
// (runtime/newsget/unpack/rartest) with a PAR2 set over the volumes, its
// recovery volumes held back as serve holds them. Each round runs the
// Engine and postproc's Processor in process exactly as serve's runner
// does (StartEarly before the download, the Engine's OnFile and
// OnSegment notes to it, PostProcess after), and measures the time from
// the last article received (the last segment note) to the files ready
// (PostProcess returned: extracted, verified, renamed into place,
// archives removed). The rounds alternate the two cases; the table shows
// each round, then the least and the median.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/newsget/parity"
	"github.com/newsflow/newsflow/runtime/newsget/postproc"
	"github.com/newsflow/newsflow/runtime/newsget/serve"
	"github.com/newsflow/newsflow/runtime/newsget/unpack/rartest"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

func init() {
	register("get-unpack", "newsget serve with and without direct unpack: last article to files ready, RAR volume release", benchGetUnpack)
}

// getUnpackOptions are newsbench get-unpack's flags.
type getUnpackOptions struct {
	sizeMiB, volumes, partKiB int
	conns, rounds             int
	rate                      string
	rateBytes                 tomlconf.Size
	keep, verbose             bool
	log                       *slog.Logger
}

func benchGetUnpack(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("newsbench get-unpack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o getUnpackOptions
	fs.IntVar(&o.sizeMiB, "size", 1024, "the release's size in `MiB`")
	fs.IntVar(&o.volumes, "volumes", 20, "RAR volumes the release is split into")
	fs.IntVar(&o.partKiB, "part", 700, "yEnc part size in `KiB`")
	fs.IntVar(&o.conns, "connections", 8, "connections")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds of each case")
	fs.StringVar(&o.rate, "rate", "0", "download `rate` (newsget's rate: \"100M\"); 0: as fast as loopback goes")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory")
	fs.BoolVar(&o.verbose, "v", false, "log newsget's events to stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := o.rateBytes.UnmarshalText([]byte(o.rate)); err != nil {
		return fmt.Errorf("-rate: %w", err)
	}
	if o.verbose {
		o.log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	if o.sizeMiB < 1 || o.volumes < 1 || o.partKiB < 1 || o.conns < 1 || o.rounds < 1 {
		return errors.New("-size, -volumes, -part, -connections and -rounds must be positive")
	}
	work, err := os.MkdirTemp("", "newsbench-get-unpack-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(stderr, "newsbench get-unpack: work directory %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	fmt.Fprintf(stderr, "newsbench get-unpack: writing a %d MiB release in %d RAR volumes...\n", o.sizeMiB, o.volumes)
	size := o.sizeMiB << 20
	data := poster.RandomData(7, size)
	want := sha256.Sum256(data)
	vols := rartest.WriteRAR5([]rartest.Entry{{Name: "release.mkv", Data: data}}, (size+o.volumes-1)/o.volumes)
	data = nil
	src := filepath.Join(work, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		return err
	}
	var names []string
	for i, v := range vols {
		n := fmt.Sprintf("release.part%02d.rar", i+1)
		if err := os.WriteFile(filepath.Join(src, n), v, 0o644); err != nil {
			return err
		}
		names = append(names, n)
	}
	fmt.Fprintf(stderr, "newsbench get-unpack: PAR2 set over the volumes...\n")
	set, err := parity.Create(context.Background(), src, "release", names, 1<<20, 4, parity.Options{})
	if err != nil {
		return err
	}
	files := slices.Clone(names)
	for _, v := range set.Volumes {
		files = append(files, filepath.Base(v))
	}
	srv, err := nntptest.New(nntptest.Options{})
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.AddGroup(nntptest.Group{Name: "alt.binaries.newsbench"})
	var ps []poster.Posting
	for i, n := range files {
		var b []byte
		if i < len(vols) {
			b = vols[i]
		} else if b, err = os.ReadFile(filepath.Join(src, n)); err != nil {
			return err
		}
		ps = append(ps, poster.Posting{Name: n, Data: b, PartSize: o.partKiB << 10, Group: "alt.binaries.newsbench",
			IDPrefix: fmt.Sprintf("gu%d-%d", time.Now().UnixNano(), i)})
	}
	if err := serveArticles(srv, ps); err != nil {
		return err
	}
	nzb := poster.NZB(ps...)
	ps, vols = nil, nil
	if err := os.RemoveAll(src); err != nil {
		return err
	}

	loadBefore := loadAvg()
	type result struct{ download, tail time.Duration }
	results := map[bool][]result{}
	fmt.Fprintf(stdout, "%-8s %5s %12s %22s\n", "direct", "round", "download_s", "last_article_to_ready_s")
	for r := 1; r <= o.rounds; r++ {
		for _, direct := range []bool{false, true} {
			dl, tail, err := getUnpackRound(o, srv.Port(), nzb, filepath.Join(work, fmt.Sprintf("r%d-%v", r, direct)), direct, want)
			if err != nil {
				return fmt.Errorf("round %d, direct unpack %v: %w", r, direct, err)
			}
			results[direct] = append(results[direct], result{dl, tail})
			fmt.Fprintf(stdout, "%-8v %5d %12.2f %22.2f\n", direct, r, dl.Seconds(), tail.Seconds())
		}
	}
	stat := func(direct bool) (least, median time.Duration) {
		var ts []time.Duration
		for _, x := range results[direct] {
			ts = append(ts, x.tail)
		}
		slices.Sort(ts)
		return ts[0], ts[len(ts)/2]
	}
	offMin, offMed := stat(false)
	onMin, onMed := stat(true)
	fmt.Fprintf(stdout, "\nlast article to files ready, %d MiB in %d RAR volumes, rate %s, %d rounds:\n", o.sizeMiB, o.volumes, o.rate, o.rounds)
	fmt.Fprintf(stdout, "  without direct unpack: min %.2f s, median %.2f s\n", offMin.Seconds(), offMed.Seconds())
	fmt.Fprintf(stdout, "  with direct unpack:    min %.2f s, median %.2f s\n", onMin.Seconds(), onMed.Seconds())
	fmt.Fprintf(stdout, "  load average before %s, after %s\n", loadBefore, loadAvg())
	fmt.Fprintf(stdout, "ratio get-unpack-%dM-%dvol time %.3f\n", o.sizeMiB, o.volumes, onMed.Seconds()/offMed.Seconds())
	return nil
}

// getUnpackRound downloads the release into dir and post-processes it as
// newsget serve does, with or without direct unpack; it returns the
// download's time and the time from the last article to the files ready,
// after checking the file against want.
func getUnpackRound(o getUnpackOptions, port int, nzb []byte, dir string, direct bool, want [32]byte) (dl, tail time.Duration, err error) {
	defer os.RemoveAll(dir)
	cfg := &newsget.Config{DownloadDir: dir, Servers: []newsget.ServerConfig{{Name: "bench", Host: "127.0.0.1", Port: port, Connections: o.conns}}}
	cfg.DirectUnpack, cfg.Rate = &direct, o.rateBytes
	for _, check := range []func() error{cfg.Check, cfg.ResolveDirs} {
		if err := check(); err != nil {
			return 0, 0, err
		}
	}
	ctx := context.Background()
	pp := postproc.NewProcessor(cfg, o.log)
	job := serve.PostJob{Dir: dir, Name: "release"}
	early := pp.StartEarly(ctx, job)
	if (early != nil) != direct {
		return 0, 0, fmt.Errorf("direct unpack %v, but the Processor's early work is %v", direct, early)
	}
	var last atomic.Int64
	eo := newsget.Options{Log: o.log, OnSegment: func(n newsget.SegmentNote) {
		last.Store(time.Now().UnixNano())
		if early != nil {
			early.OnSegment(n)
		}
	}}
	if early != nil {
		eo.OnFile = early.OnFile
	}
	eng, err := newsget.New(cfg, eo)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	sum, err := eng.Download(ctx, []newsget.Job{{Name: "release.nzb", NZB: nzb, HoldRecovery: true}})
	eng.Close()
	if err != nil {
		return 0, 0, err
	}
	if !sum.Complete() {
		return 0, 0, fmt.Errorf("download incomplete: %s %v", sum.Fatal, sum.JobErrs)
	}
	job.Files, job.Early = sum.Files, early
	res := pp.PostProcess(ctx, job)
	ready := time.Now()
	if res.Status != serve.Completed {
		return 0, 0, fmt.Errorf("post-processing: %s", res.Reason)
	}
	f, err := os.Open(filepath.Join(dir, "release.mkv"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return 0, 0, err
	}
	if !bytes.Equal(h.Sum(nil), want[:]) {
		return 0, 0, errors.New("release.mkv differs from the release's file")
	}
	lastAt := time.Unix(0, last.Load())
	return lastAt.Sub(start), ready.Sub(lastAt), nil
}
