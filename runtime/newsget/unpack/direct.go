package unpack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/newsflow/newsflow/runtime/newsget"
)

// Direct unpack: a RAR volume set extracted while the job downloads.
//
// A Direct reads the set with the same code as Dir (walk, extraction.add)
// into the same staging folder, through a file system whose Open of a
// volume waits until the download reports that volume complete (Complete)
// and answers "does not exist" for a name the job does not download
// (neither complete nor Pending) or once the download is over
// (DownloadOver). Stop ends it at once: every Open and the entry being
// copied fail, and the staging folder is removed. A Direct that read
// every volume with every CRC-32 matching keeps its staging folder; Dir,
// given it in Options.Direct, renames those files into place instead of
// extracting the set again, when the set's volumes on disk are the ones
// the Direct read (Ready). Nothing reaches a final name before that, so
// a crash leaves only a staging folder, which Dir removes as stale.
//
// 7-Zip sets are not read this way: a 7z archive's header, which lists
// its files, is at its end, so nothing can be extracted before the last
// volume is there.

// directSyncEvery is how often a direct unpack fdatasyncs the file it
// writes: the data is on disk by the time the last volume arrives, and
// the final fsync has little left to do.
const directSyncEvery = 32 << 20

// ErrDirectStopped is the error of a Direct that Stop ended.
var ErrDirectStopped = errors.New("direct unpack stopped")

// DirectSpec says what a Direct extracts.
type DirectSpec struct {
	Dir   string // the job's folder
	First string // the set's first volume, complete, in Dir
	// Options: Password and the limits (Files, Cleanup and Direct are
	// not used).
	Options Options
	// Complete and Pending are the job's files known when it starts, by
	// name, with their sizes (for Pending, the NZB's bytes): the set's
	// expected size bounds what it may unpack to (archiveLimit).
	Complete, Pending map[string]int64
}

// A Direct is one RAR set being extracted during its download.
type Direct struct {
	dir, first string
	stage      string
	ctx        context.Context
	cancel     context.CancelFunc

	mu       sync.Mutex
	cond     *sync.Cond
	complete map[string]bool
	pending  map[string]bool
	over     bool     // the download ended: no file will complete any more
	stopped  error    // Stop's reason
	used     bool     // committed by Dir
	opened   []string // the volumes opened, in order

	done    chan struct{}
	a       Archive
	x       *extraction
	volumes []string // the volumes read, first first
	err     error
}

// IsDirectStart reports whether name is the volume a RAR set is read
// from (x.part1.rar, x.part01.rar, x.rar): the one a Direct starts with.
func IsDirectStart(name string) bool {
	sets := Sets([]string{name})
	return len(sets) == 1 && sets[0].Format == RAR && sets[0].Problem == ""
}

// StartDirect starts extracting the RAR set whose first volume is
// spec.First; ctx ends it as Stop does.
func StartDirect(ctx context.Context, spec DirectSpec) (*Direct, error) {
	if !IsDirectStart(spec.First) {
		return nil, fmt.Errorf("direct unpack: %s is not the first volume of a RAR set", spec.First)
	}
	o := spec.Options
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxRatio <= 0 {
		o.MaxRatio = DefaultMaxRatio
	}
	d := &Direct{dir: spec.Dir, first: spec.First, complete: map[string]bool{}, pending: map[string]bool{},
		done: make(chan struct{}), stage: filepath.Join(spec.Dir, stagePrefix+newsget.SanitizeName(spec.First, "archive"))}
	d.cond = sync.NewCond(&d.mu)
	d.ctx, d.cancel = context.WithCancel(ctx)
	var names []string
	sizes := map[string]int64{}
	for n, sz := range spec.Complete {
		d.complete[n], sizes[n] = true, sz
		names = append(names, n)
	}
	for n, sz := range spec.Pending {
		d.pending[n], sizes[n] = true, sz
		names = append(names, n)
	}
	d.complete[spec.First] = true
	var vol int64
	for _, s := range Sets(names) {
		if s.First() == spec.First {
			for _, v := range s.Volumes {
				vol += sizes[v]
			}
		}
	}
	d.a = Archive{Name: spec.First}
	go d.run(o, vol)
	// A context that ends wakes the Opens waiting for a volume.
	go func() {
		select {
		case <-d.ctx.Done():
			d.Stop(ErrDirectStopped)
		case <-d.done:
		}
	}()
	return d, nil
}

// First is the volume the Direct reads first.
func (d *Direct) First() string { return d.first }

// run extracts the set into the staging folder; it keeps the folder only
// when the whole set was read and verified.
func (d *Direct) run(o Options, vol int64) {
	defer close(d.done)
	fail := func(err error) {
		os.RemoveAll(d.stage)
		d.mu.Lock()
		switch {
		case d.stopped != nil && errors.Is(err, d.stopped):
			err = d.stopped // the extraction's error is the stop's: say it once
		case d.stopped != nil:
			err = fmt.Errorf("%w: %w", d.stopped, err)
		}
		d.mu.Unlock()
		d.err = fmt.Errorf("direct unpack %s: %w", d.first, err)
	}
	if err := os.RemoveAll(d.stage); err != nil {
		fail(err)
		return
	}
	if err := os.Mkdir(d.stage, 0o755); err != nil {
		fail(err)
		return
	}
	x := &extraction{ctx: d.ctx, stage: d.stage, opts: o, a: &d.a, seen: map[string]bool{}, syncEvery: directSyncEvery}
	x.limit, x.limitWhy = archiveLimit(d.dir, vol, o)
	err := guard(RAR, d.first, func() error {
		_, err := walkRAR(filepath.Join(d.dir, d.first), o.Password, directFS{d}, x.add)
		return err
	})
	if err == nil {
		err = d.ctx.Err()
	}
	if err != nil {
		fail(err)
		return
	}
	d.mu.Lock()
	d.x, d.volumes = x, slices.Clone(d.opened)
	d.mu.Unlock()
}

// directFS is the file system the RAR reader opens volumes through.
type directFS struct{ d *Direct }

func (f directFS) Open(path string) (fs.File, error) { return f.d.open(path) }

// open opens a volume of the job's folder once it is complete; it waits
// while the download may still bring it.
func (d *Direct) open(path string) (fs.File, error) {
	dir, base := filepath.Split(path)
	notExist := &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	if filepath.Clean(dir) != filepath.Clean(d.dir) {
		return nil, notExist
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		switch {
		case d.stopped != nil:
			return nil, d.stopped
		case d.complete[base]:
			f, err := os.Open(path)
			if err == nil && !slices.Contains(d.opened, base) {
				d.opened = append(d.opened, base)
			}
			return f, err
		case d.over || !d.pending[base]:
			return nil, notExist
		}
		d.cond.Wait()
	}
}

// Pending says that the download will bring name.
func (d *Direct) Pending(name string) {
	d.mu.Lock()
	d.pending[name] = true
	d.mu.Unlock()
	d.cond.Broadcast()
}

// Complete says that name is downloaded whole and verified, under its
// final name; pending is its name while it downloaded (the NZB's), which
// it no longer has when the two differ.
func (d *Direct) Complete(name, pending string) {
	d.mu.Lock()
	delete(d.pending, pending)
	d.complete[name] = true
	d.mu.Unlock()
	d.cond.Broadcast()
}

// DownloadOver says that no file will complete any more: a volume not
// complete now does not exist.
func (d *Direct) DownloadOver() {
	d.mu.Lock()
	d.over = true
	d.mu.Unlock()
	d.cond.Broadcast()
}

// Stop gives the Direct up (a file of the job needs a repair, the job
// was paused or deleted): the reader stops at once and the staging
// folder is removed. It does not wait; Wait does.
func (d *Direct) Stop(why error) {
	d.mu.Lock()
	if d.stopped == nil && !d.used {
		d.stopped = why
	}
	d.mu.Unlock()
	d.cond.Broadcast()
	d.cancel()
}

// Wait waits for the extraction to end and returns its error: nil when
// the staging folder holds the whole set, verified.
func (d *Direct) Wait() error {
	<-d.done
	return d.err
}

// Discard stops the Direct, waits for it and removes its staging folder,
// unless Dir committed it.
func (d *Direct) Discard() {
	d.Stop(ErrDirectStopped)
	<-d.done
	d.mu.Lock()
	used := d.used
	d.mu.Unlock()
	if !used {
		os.RemoveAll(d.stage)
	}
}

// Result is what the Direct extracted: the files staged and the volumes
// read, once it ended without error.
func (d *Direct) Result() (files, volumes []string, ok bool) {
	select {
	case <-d.done:
	default:
		return nil, nil, false
	}
	if d.err != nil {
		return nil, nil, false
	}
	return d.a.Files, d.volumes, true
}

// take hands the Direct's extraction of set s to Dir: when it ended
// whole, was not stopped and read exactly the set's volumes.
func (d *Direct) take(s Set) (*extraction, bool) {
	select {
	case <-d.done:
	default:
		return nil, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil || d.stopped != nil || d.used || d.x == nil || !slices.Equal(d.volumes, s.Volumes) {
		return nil, false
	}
	d.used = true
	return d.x, true
}

// directFor is the Direct of opts for the set whose first volume is
// first, or nil.
func directFor(opts Options, first string) *Direct {
	for _, d := range opts.Direct {
		if d != nil && d.first == first {
			return d
		}
	}
	return nil
}

// isStageOf reports whether the folder name is a staging folder of one
// of the Directs of opts (not stale).
func isStageOf(opts Options, name string) bool {
	for _, d := range opts.Direct {
		if d != nil && filepath.Base(d.stage) == name && strings.HasPrefix(name, stagePrefix) {
			select {
			case <-d.done:
				return d.err == nil
			default:
			}
		}
	}
	return false
}
