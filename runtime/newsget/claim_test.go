package newsget

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestPartClaimSurvivesRestarts: a job stopped before any segment was
// recorded done leaves a .part its file's info claims; the next run
// reopens that .part as its own and, when it writes the file's info (the
// size learned from a part), keeps the claim in it. A kill between that
// write and the segment's progress record leaves no segment done, and the
// run after it reopens the .part only on that claim: without it, the .part
// is refused as somebody else's and the job never finishes.
func TestPartClaimSurvivesRestarts(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("claim.bin", 61, 6000, 1500)
	serve(t, s, nil, p)
	nzb := poster.NZB(p)
	sc := server(s, "s1")
	sc.Connections, sc.Pipeline = 1, 1 // segment 1 is asked for first
	r := newRun(t, sc)
	if err := r.cfg.Check(); err != nil {
		t.Fatal(err)
	}
	if err := r.cfg.ResolveDirs(); err != nil {
		t.Fatal(err)
	}
	infoFile := func() (fileInfo, bool) {
		infos, _ := filepath.Glob(filepath.Join(r.cfg.QueueDir, "files", "*", "0.json"))
		if len(infos) != 1 {
			return fileInfo{}, false
		}
		return readInfo(infos[0])
	}

	// BODY of segment 1 is answered when serveFirst is set; every other
	// BODY waits until the test ends.
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	var serveFirst atomic.Bool
	s.SetHandler("BODY", func(conn int, cmd proto.Command) []byte {
		if id := p.MessageID(1); serveFirst.Load() && len(cmd.Args) > 0 && cmd.Args[0] == id {
			wire, _ := s.ArticleBytes(id)
			body := wire[bytes.Index(wire, []byte("\r\n\r\n"))+4:]
			return proto.AppendBlock(proto.AppendResponse(nil, proto.CodeBodyFollows, "0 "+id), body)
		}
		<-release
		return proto.AppendResponse(nil, proto.CodeNoSuchID, "No such article")
	})

	// stop runs the engine and stops it, as a shutdown does, once until
	// says so.
	stop := func(until func() bool) {
		t.Helper()
		opts := r.opts
		opts.Log = slog.New(slog.NewTextHandler(&r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		e, err := New(&r.cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		go func() {
			defer cancel()
			for ctx.Err() == nil && !until() {
				time.Sleep(5 * time.Millisecond)
			}
		}()
		e.Download(ctx, []Job{{Name: "job1.nzb", NZB: nzb}})
		if ctx.Err() == context.DeadlineExceeded {
			t.Fatalf("the engine did not stop:\n%s", r.log.String())
		}
	}
	// First run: asks for a segment, gets none.
	stop(func() bool { return s.Count("BODY") > 0 })
	if _, err := os.Lstat(filepath.Join(r.cfg.DownloadDir, "claim.bin.part")); err != nil {
		t.Fatalf("the first run left no .part: %v", err)
	}
	// Second run: segment 1 arrives; stopped once its commit wrote the
	// file's info.
	serveFirst.Store(true)
	stop(func() bool { fi, ok := infoFile(); return ok && fi.Size > 0 })
	if fi, _ := infoFile(); fi.Part != "claim.bin.part" {
		t.Errorf("the file's info after the second run: %+v; want the claim on claim.bin.part", fi)
	}
	free()
	s.SetHandler("BODY", nil)

	sum := r.run(t, nzb)
	if !sum.Complete() {
		t.Fatalf("third run: %v", results(sum))
	}
	if diff := cmp.Diff(map[string]string{"claim.bin": digest(p.Data)}, r.outputs(t)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

// An empty NAME.part that no run marked as its job's (a run killed
// between creating it and recording the claim leaves one) is taken over;
// one with bytes in it stays refused.
func TestEmptyUnclaimedPartTakenOver(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	empty := newPosting("empty.bin", 50, 3000, 1500)
	full := newPosting("full.bin", 51, 3000, 1500)
	serve(t, s, nil, empty, full)
	r := newRun(t, server(s, "s1"))
	if err := os.MkdirAll(r.cfg.DownloadDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.cfg.DownloadDir, "empty.bin.part"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fullPart := filepath.Join(r.cfg.DownloadDir, "full.bin.part")
	if err := os.WriteFile(fullPart, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := r.run(t, poster.NZB(empty, full))
	got := map[string]string{}
	for _, f := range sum.Files {
		got[f.Name] = fmt.Sprintf("complete=%v err=%q", f.Complete, f.Err)
	}
	if len(sum.Files) != 2 || !sum.Files[0].Complete && !sum.Files[1].Complete {
		t.Fatalf("results: %v", got)
	}
	for _, f := range sum.Files {
		switch {
		case strings.HasPrefix(f.Name, "empty.bin") && !f.Complete:
			t.Errorf("the empty unclaimed .part was refused: %v", got)
		case strings.HasPrefix(f.Name, "full.bin") && (f.Complete || !strings.Contains(f.Err, "not overwritten")):
			t.Errorf("a .part with bytes was taken over: %v", got)
		}
	}
	if b, _ := os.ReadFile(fullPart); string(b) != "x" {
		t.Errorf("the .part with bytes was changed: %q", b)
	}
}
