package postproc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/newsget/unpack"
)

// Direct unpack (unpack.Direct) during a download: a job's Early starts
// it when the first volume of a RAR set arrives complete and no article
// of the job has failed so far; it gives it up (Stop) at the first
// article no server has, or file that ends incomplete, since a repair
// will then rewrite files. One set per job is read early; Slots bounds
// the direct unpacks of all jobs at once (a job that finds none free
// unpacks after its download). Run then waits for it and, when it read
// the whole set and nothing was repaired or renamed, has unpack.Dir
// rename its files into place instead of extracting the set again.

// Slots bounds how many direct unpacks run at once.
type Slots chan struct{}

// NewSlots allows n direct unpacks at once.
func NewSlots(n int) Slots { return make(Slots, n) }

// Early is one job's direct unpack while it downloads: the Engine's
// OnFile and OnSegment (newsget serve's Early; StartEarly makes it).
type Early struct {
	ctx   context.Context
	dir   string
	opts  unpack.Options
	slots Slots
	log   *slog.Logger

	mu       sync.Mutex
	heard    map[int]bool     // the files noted, by index
	files    int              // the job's number of files
	first    string           // a RAR set's first volume, complete
	pending  map[string]int64 // NZB name -> article bytes, of files queued
	complete map[string]int64 // final name -> size
	stopped  string           // why no direct unpack runs (any more)
	d        *unpack.Direct
}

// NewEarly is the direct unpack of a job downloading into dir; nil
// slots: none.
func NewEarly(ctx context.Context, dir string, opts unpack.Options, slots Slots, log *slog.Logger) *Early {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Early{ctx: ctx, dir: dir, opts: opts, slots: slots, log: log,
		heard: map[int]bool{}, pending: map[string]int64{}, complete: map[string]int64{}}
}

// OnSegment gives the direct unpack up when an article is missing on
// every server: a repair will follow.
func (w *Early) OnSegment(n newsget.SegmentNote) {
	if n.Failed {
		w.stop(fmt.Sprintf("an article of %s is missing: a repair comes first", n.Name))
	}
}

// OnFile follows the job's files: it starts the direct unpack at the
// first volume of a RAR set (once it has heard of every file of the job,
// so that the reader knows which volumes are still to come), tells it of
// every volume complete, and gives it up at a file that ended
// incomplete.
func (w *Early) OnFile(n newsget.FileNote) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.heard[n.File], w.files = true, n.Files
	defer w.start()
	if !n.Finished {
		w.pending[n.NZBName] = n.Bytes
		if w.d != nil {
			w.d.Pending(n.NZBName)
		}
		return
	}
	delete(w.pending, n.NZBName)
	switch {
	case n.Held:
		return
	case !n.Complete:
		w.stopLocked(fmt.Sprintf("%s is incomplete: a repair comes first", n.Name))
		return
	}
	w.complete[n.Name] = n.Size
	if w.d != nil {
		w.d.Complete(n.Name, n.NZBName)
		return
	}
	if w.first == "" && unpack.IsDirectStart(n.Name) {
		w.first = n.Name
	}
}

// start starts the direct unpack of w.first when every file is known.
// Called with mu held.
func (w *Early) start() {
	if w.d != nil || w.first == "" || w.stopped != "" || w.slots == nil || len(w.heard) < w.files {
		return
	}
	select {
	case w.slots <- struct{}{}:
	default:
		w.stopped = "every direct unpack slot is busy"
		w.log.Info("direct unpack: every slot busy; the set unpacks after the download", "set", w.first)
		return
	}
	d, err := unpack.StartDirect(w.ctx, unpack.DirectSpec{Dir: w.dir, First: w.first, Options: w.opts,
		Complete: maps.Clone(w.complete), Pending: maps.Clone(w.pending)})
	if err != nil {
		<-w.slots
		w.stopped = err.Error()
		return
	}
	w.d = d
	w.log.Info("direct unpack started", "set", w.first)
	go func() {
		err := d.Wait()
		<-w.slots
		if err != nil {
			// Stopped with the download (a pause, a delete, a stop),
			// it is not given up for an unpack after it: Stop says so.
			if !errors.Is(err, unpack.ErrDirectStopped) {
				w.log.Info("direct unpack given up; the set unpacks after the download", "set", d.First(), "why", err)
			}
			return
		}
		files, vols, _ := d.Result()
		w.log.Info("direct unpack finished", "set", d.First(), "volumes", len(vols), "files", len(files))
	}()
}

// stop gives the direct unpack up.
func (w *Early) stop(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked(why)
}

func (w *Early) stopLocked(why string) {
	if w.stopped == "" {
		w.stopped = why
	}
	if w.d != nil {
		w.d.Stop(errors.New(why))
	}
}

// Stop gives the direct unpack up and waits until its staging folder is
// gone (the job was paused, deleted or stopped).
func (w *Early) Stop() {
	w.mu.Lock()
	d := w.d
	w.mu.Unlock()
	if d != nil {
		d.Discard()
		w.log.Info("direct unpack stopped with the download; its staging folder removed", "set", d.First())
	}
}

// Downloaded says that the download is over and returns the direct
// unpack, if one ran, for Job.Direct.
func (w *Early) Downloaded() *unpack.Direct {
	w.mu.Lock()
	d := w.d
	w.mu.Unlock()
	if d != nil {
		d.DownloadOver()
	}
	return d
}
