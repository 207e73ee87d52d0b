// Package postproc is what newsget does with a job's folder after the
// download: verify the files against their PAR2 sets, fetch just enough
// held-back recovery volumes, repair, verify again, unpack the archives
// and clean up. cmd/newsget runs it after every download; Processor is
// the same stage as newsget serve's PostProcessor.
//
// # Theory of operation
//
// The download holds the NZB's recovery volumes back (newsget.Job's
// HoldRecovery): their results are Held, each with its NZB entry. Run
// then takes one PAR2 set at a time (every index NAME.par2 of the job):
//
//  1. An incomplete file (NAME.part, its missing ranges zero) is moved to
//     NAME for the time of the repair, so that verify counts only its
//     damaged slices; the move is undone if the job fails.
//  2. Verify (runtime/newsget/parity) with the yEnc part CRCs of the
//     download (FileResult.Parts) as Options.Known: a clean file is
//     confirmed by CRC-32 combine without being read. Files found under
//     other names (obfuscated posts) are renamed to the set's names.
//  3. When slices are missing and the set's recovery blocks on disk are
//     too few, machine/volumes.Choose picks the held volumes of the set
//     that bring the blocks short for the fewest bytes; Fetch downloads
//     them with the same servers, as a job of their own. A volume that
//     arrives incomplete brings nothing; another round chooses among the
//     rest (at most maxRounds).
//  4. Repair writes the rebuilt slices in place and checks every repaired
//     file's MD5 (its report is the second verify).
//  5. With every set whole and no incomplete file left outside a set, the
//     archives are unpacked and, with Cleanup, archives and PAR2 files are
//     removed (runtime/newsget/unpack; the PAR2 files also where there is
//     no archive). A RAR set that a direct unpack
//     (direct.go) read whole during the download, with nothing repaired
//     or renamed since, is renamed into place from its staging folder
//     instead of being extracted again.
//
// Any failure stops the job there with Result.Err saying why: nothing is
// removed, and incomplete files are back under NAME.part. Run writes what
// it did back into the job's results (Job.Files): renamed files under
// their new names, repaired ones Complete, removed ones Removed.
package postproc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/newsflow/newsflow/machine/volumes"
	"github.com/newsflow/newsflow/proto"
	pproto "github.com/newsflow/newsflow/proto/par2"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/newsget/parity"
	"github.com/newsflow/newsflow/runtime/newsget/unpack"
)

// maxRounds bounds the fetches of one set: a volume that arrives
// incomplete is replaced by a choice among the others, not forever.
const maxRounds = 3

// FetchFunc downloads the job j into dir with newsget's servers and
// returns what became of its files.
type FetchFunc func(ctx context.Context, dir string, j newsget.Job) (*newsget.Summary, error)

// Options tune Run.
type Options struct {
	// Fetch downloads held-back recovery volumes; nil: none is fetched
	// (repair uses what is on disk).
	Fetch FetchFunc
	// Unpack unpacks the job's archives once every file is whole;
	// Cleanup then removes the archives and PAR2 files.
	Unpack, Cleanup bool
	// UnpackMaxRatio bounds what an archive unpacks to, in times its
	// volumes (unpack.Options.MaxRatio; its default when zero).
	UnpackMaxRatio int
	// Workers is par2's goroutines (default GOMAXPROCS).
	Workers int
	Log     *slog.Logger // nil: discard
}

// Job is a downloaded job's folder and what the download said of it.
type Job struct {
	Dir      string
	Name     string // for messages and the fetch job's name
	Password string // of encrypted archives
	Files    []*newsget.FileResult
	// Direct is the direct unpack that ran during the download (Early),
	// or nil. Run waits for it, uses what it extracted when nothing was
	// repaired or renamed since, and removes what it left otherwise.
	Direct *unpack.Direct
}

// Verified is the first verify of one PAR2 set.
type Verified struct {
	Set     string // the index file
	Files   int    // files the set protects
	Whole   int    // of those, intact
	Quick   int    // confirmed from the download's CRCs without reading
	Read    int64  // bytes read to verify
	Missing int    // input slices to rebuild
	// Unreadable says why the set could not be read; with every file of
	// the job complete (checked by its yEnc CRCs) that is not a failure.
	Unreadable string
}

// Rename is a file found under another name and renamed to the set's.
type Rename struct{ From, To string }

// Fetched is a recovery volume fetched for a repair.
type Fetched struct {
	Name   string
	Blocks int
	Size   int64  // its article bytes (the NZB's bytes=)
	Err    string // when it did not arrive complete
}

// Repaired is a file rebuilt by a repair.
type Repaired struct {
	Name   string
	Slices int // slices rebuilt
}

// Result is what Run did.
type Result struct {
	Verified []Verified
	Renamed  []Rename
	Fetched  []Fetched
	Repaired []Repaired
	// Received is what the fetches of recovery volumes read from the
	// servers, in bytes.
	Received int64
	Unpack   *unpack.Result // nil when not unpacked
	// Direct says what became of the direct unpack during the download:
	// "" when none ran, "used" when its files were renamed into place,
	// else why they were not (the set was extracted again).
	Direct string
	Err    error // nil: every file whole (and unpacked)
	// Settled: files the download left incomplete are whole now; their
	// results in Job.Files say so (Complete, under their names now), for
	// newsget.SettleJob.
	Settled bool
}

// FetchedBlocks adds up the recovery blocks and volumes that arrived.
func (r *Result) FetchedBlocks() (blocks, volumes int) {
	for _, f := range r.Fetched {
		if f.Err == "" {
			blocks += f.Blocks
			volumes++
		}
	}
	return blocks, volumes
}

// run is one Run's state.
type run struct {
	job  Job
	o    Options
	log  *slog.Logger
	res  *Result
	held []*newsget.FileResult
	// moved are incomplete files moved from NAME.part to NAME: undone
	// (from wherever verify renamed them) when the job fails.
	moved map[string]string // current name -> NAME.part
	names map[string]bool   // the job's files as they are named now
	// byName are the job's results by the name their file has now, so
	// that renames, repairs and removals can be written back to them.
	byName map[string]*newsget.FileResult
}

// Run post-processes a downloaded job's folder (see the package comment).
func Run(ctx context.Context, job Job, o Options) *Result {
	r := &run{job: job, o: o, log: o.Log, res: &Result{}, moved: map[string]string{}, names: map[string]bool{},
		byName: map[string]*newsget.FileResult{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if job.Direct != nil {
		defer job.Direct.Discard()
	}
	if err := r.run(ctx); err != nil {
		r.res.Err = err
		r.undo()
	}
	return r.res
}

func (r *run) run(ctx context.Context) error {
	var sets []string
	incomplete := map[string]string{} // name (without .part) -> why
	known := map[string][]pproto.RangeCRC{}
	for _, f := range r.job.Files {
		if f.Held {
			r.held = append(r.held, f)
			continue
		}
		if f.Removed {
			continue // unpacked and cleaned up by an earlier run
		}
		name := f.Name
		if !f.Complete {
			if f.Path == "" || !strings.HasSuffix(f.Name, ".part") {
				incomplete[name] = f.Err // never started (refused): nothing to move
				continue
			}
			name = strings.TrimSuffix(f.Name, ".part")
			incomplete[name] = f.Err
			if err := r.moveIn(f.Name, name); err != nil {
				return err
			}
		}
		r.names[name] = true
		r.byName[name] = f
		for _, p := range f.Parts {
			known[name] = append(known[name], pproto.RangeCRC{Offset: p.Offset, Length: p.Size, CRC32: p.CRC32})
		}
		if p, ok := volumes.ParsePar2Name(name); ok && p.Index && f.Complete {
			sets = append(sets, name)
		}
	}
	for _, idx := range sets {
		whole, err := r.set(ctx, idx, known)
		var unreadable *unreadableError
		if errors.As(err, &unreadable) && len(incomplete) == 0 {
			r.log.Warn("PAR2 set unreadable; the download's CRCs verified every file", "set", idx, "err", err)
			r.res.Verified = append(r.res.Verified, Verified{Set: idx, Unreadable: unreadable.err.Error()})
			continue
		}
		if err != nil {
			return err
		}
		for _, n := range whole {
			delete(incomplete, n)
		}
	}
	if len(incomplete) > 0 {
		var list []string
		for n, why := range incomplete {
			list = append(list, fmt.Sprintf("%s: %s", n, why))
		}
		slices.Sort(list)
		if len(sets) == 0 {
			return fmt.Errorf("%d files incomplete and no PAR2 set to repair them (%s)", len(list), list[0])
		}
		return fmt.Errorf("%d files incomplete and not protected by the PAR2 sets (%s)", len(list), list[0])
	}
	// Whole: the moves stand; their .incomplete notes are stale, and the
	// results of the files repaired say they are complete now.
	for cur, part := range r.moved {
		os.Remove(filepath.Join(r.job.Dir, strings.TrimSuffix(part, ".part")+".incomplete"))
		r.log.Info("repaired file in place", "name", cur)
	}
	r.moved = map[string]string{}
	for name, f := range r.byName {
		if f.Complete {
			continue
		}
		st, err := os.Stat(filepath.Join(r.job.Dir, name))
		if err != nil {
			return fmt.Errorf("after repair: %w", err)
		}
		f.Name, f.Path, f.Size, f.Complete, f.Err, f.Missing = name, filepath.Join(r.job.Dir, name), st.Size(), true, "", nil
		r.res.Settled = true
	}
	if !r.o.Unpack {
		return nil
	}
	files := make([]string, 0, len(r.names))
	for n := range r.names {
		files = append(files, n)
	}
	slices.Sort(files)
	uo := unpack.Options{Password: r.job.Password, Cleanup: r.o.Cleanup, Verified: true, Files: files, MaxRatio: r.o.UnpackMaxRatio}
	if d := r.job.Direct; d != nil {
		switch err := d.Wait(); {
		case err != nil:
			r.res.Direct = err.Error()
		case len(r.res.Repaired) > 0 || len(r.res.Renamed) > 0 || r.res.Settled:
			r.res.Direct = "files were repaired or renamed after it read them"
		default:
			uo.Direct = []*unpack.Direct{d}
		}
	}
	res, err := unpack.Dir(ctx, r.job.Dir, uo)
	if len(uo.Direct) > 0 {
		r.res.Direct = "used"
		for _, a := range res.Archives {
			if a.Name == r.job.Direct.First() && a.Err == nil {
				r.log.Info("direct unpack used: its files renamed into place", "set", a.Name, "files", len(a.Files))
			}
		}
	}
	r.res.Unpack = res
	if res != nil {
		for _, n := range res.Removed {
			if f := r.byName[n]; f != nil {
				f.Removed = true
			}
		}
	}
	if err != nil {
		return err
	}
	for _, a := range res.Archives {
		if a.Err != nil {
			return fmt.Errorf("unpack failed: %w; archives left in place", a.Err)
		}
	}
	return nil
}

// set verifies, completes and repairs the PAR2 set of the index idx, and
// returns the names of the files it made whole, with the names they were
// found under when verify renamed them.
func (r *run) set(ctx context.Context, idx string, known map[string][]pproto.RangeCRC) ([]string, error) {
	path := filepath.Join(r.job.Dir, idx)
	s, err := parity.Open(ctx, path)
	if err != nil {
		return nil, &unreadableError{err}
	}
	po := parity.Options{Known: known, Workers: r.o.Workers}
	rep, err := s.Verify(ctx, po)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", idx, err)
	}
	v := Verified{Set: idx, Files: len(rep.Files), Quick: rep.Quick, Read: rep.Read, Missing: len(rep.Missing)}
	var names []string
	for i := range rep.Files {
		f := &rep.Files[i]
		names = append(names, f.Name)
		r.names[f.Name] = true
		if f.Whole() {
			v.Whole++
		}
		if f.RenamedFrom != "" {
			names = append(names, f.RenamedFrom)
			r.res.Renamed = append(r.res.Renamed, Rename{From: f.RenamedFrom, To: f.Name})
			delete(r.names, f.RenamedFrom)
			if fr := r.byName[f.RenamedFrom]; fr != nil {
				delete(r.byName, f.RenamedFrom)
				r.byName[f.Name] = fr
				if fr.Complete {
					fr.Name, fr.Path = f.Name, filepath.Join(r.job.Dir, f.Name)
				}
			}
			if part, ok := r.moved[f.RenamedFrom]; ok {
				delete(r.moved, f.RenamedFrom)
				r.moved[f.Name] = part
			}
		}
	}
	slices.SortFunc(r.res.Renamed, func(a, b Rename) int { return strings.Compare(a.To, b.To) })
	r.res.Verified = append(r.res.Verified, v)
	if rep.Whole() {
		return names, nil
	}
	base, _ := volumes.ParsePar2Name(idx)
	tried := map[string]bool{}
	for round := 0; len(rep.Missing) > len(s.Recovery); round++ {
		short := len(rep.Missing) - len(s.Recovery)
		var cands []volumes.Volume
		byName := map[string]*newsget.FileResult{}
		for _, h := range r.held {
			p, ok := volumes.ParsePar2Name(h.Name)
			if !ok || p.Index || !strings.EqualFold(p.Base, base.Base) || tried[h.Name] || h.Source == nil {
				continue
			}
			if _, err := os.Lstat(filepath.Join(r.job.Dir, h.Name)); err == nil {
				continue // on disk already, so read by Open: its blocks are counted
			}
			cands = append(cands, volumes.Volume{Name: h.Name, Blocks: p.Blocks, Size: h.Source.Bytes()})
			byName[h.Name] = h
		}
		if r.o.Fetch == nil || round >= maxRounds {
			cands = nil
		}
		choice, err := volumes.Choose(short, cands)
		if err != nil {
			return nil, fmt.Errorf("repair of %s impossible: %d slices to rebuild, %d recovery blocks on disk, %d more in the held volumes: %d short",
				idx, len(rep.Missing), len(s.Recovery), blocksOf(cands), short-blocksOf(cands))
		}
		if err := r.fetch(ctx, choice, byName, tried); err != nil {
			return nil, err
		}
		if s, err = parity.Open(ctx, path); err != nil {
			return nil, fmt.Errorf("verify: %w", err)
		}
	}
	after, err := s.Repair(ctx, rep, po)
	if err != nil {
		return nil, fmt.Errorf("repair of %s failed: %w", idx, err)
	}
	if !after.Whole() {
		return nil, fmt.Errorf("repair of %s failed: %d slices still damaged after repair", idx, len(after.Missing))
	}
	for i := range rep.Files {
		f := &rep.Files[i]
		switch {
		case f.Missing:
			r.res.Repaired = append(r.res.Repaired, Repaired{Name: f.Name, Slices: len(s.Files[i].Slices)})
		case !f.Whole():
			r.res.Repaired = append(r.res.Repaired, Repaired{Name: f.Name, Slices: len(f.Damaged)})
		}
	}
	slices.SortFunc(r.res.Repaired, func(a, b Repaired) int { return strings.Compare(a.Name, b.Name) })
	return names, nil
}

// fetch downloads the chosen volumes as one job of their own (a new NZB
// of their entries) and records what arrived.
func (r *run) fetch(ctx context.Context, choice []volumes.Volume, byName map[string]*newsget.FileResult, tried map[string]bool) error {
	n := &proto.NZB{}
	for _, v := range choice {
		tried[v.Name] = true
		n.Files = append(n.Files, *byName[v.Name].Source)
	}
	r.log.Info("fetching recovery volumes", "job", r.job.Name, "volumes", len(choice))
	sum, err := r.o.Fetch(ctx, r.job.Dir, newsget.Job{Name: r.job.Name + " (recovery)", NZB: proto.AppendNZB(nil, n)})
	if err != nil {
		return fmt.Errorf("fetch recovery volumes: %w", err)
	}
	if sum.Fatal != "" || sum.Quota != "" || len(sum.JobErrs) > 0 {
		return fmt.Errorf("fetch recovery volumes: %s", cmp.Or(sum.Fatal, sum.Quota, strings.Join(sum.JobErrs, "; ")))
	}
	r.res.Received += sum.Received
	got := map[string]*newsget.FileResult{}
	for _, f := range sum.Files {
		got[f.Name] = f
	}
	for _, v := range choice {
		fe := Fetched{Name: v.Name, Blocks: v.Blocks, Size: v.Size}
		f, ok := got[v.Name]
		switch {
		case !ok:
			fe.Err = "not in the download's results (renamed by its yEnc name?)"
		case !f.Complete:
			fe.Err = f.Err
		default:
			r.names[v.Name] = true
		}
		r.res.Fetched = append(r.res.Fetched, fe)
	}
	return nil
}

// unreadableError: a set's index could not be read as a PAR2 set.
type unreadableError struct{ err error }

func (e *unreadableError) Error() string { return "verify: " + e.err.Error() }
func (e *unreadableError) Unwrap() error { return e.err }

// moveIn moves an incomplete file from part to name for the repair.
func (r *run) moveIn(part, name string) error {
	to := filepath.Join(r.job.Dir, name)
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("%s: cannot repair in place: %s exists", part, name)
	}
	if err := os.Rename(filepath.Join(r.job.Dir, part), to); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // nothing was written: the set's repair creates it
		}
		return fmt.Errorf("move %s to %s for repair: %w", part, name, err)
	}
	r.moved[name] = part
	return nil
}

// undo puts incomplete files back under NAME.part after a failure.
func (r *run) undo() {
	for cur, part := range r.moved {
		if err := os.Rename(filepath.Join(r.job.Dir, cur), filepath.Join(r.job.Dir, part)); err != nil {
			r.log.Error("putting an incomplete file back", "name", cur, "to", part, "err", err)
		}
	}
	r.moved = map[string]string{}
}

func blocksOf(vs []volumes.Volume) int {
	n := 0
	for _, v := range vs {
		n += v.Blocks
	}
	return n
}

// EngineFetch is the Fetch of newsget's programs: a new Engine of cfg
// (opts as for the download) with dir as its download directory, closed
// when the fetch ends. The download's own Engine must be closed first:
// both use the job queue of cfg.
func EngineFetch(cfg *newsget.Config, opts newsget.Options) FetchFunc {
	return func(ctx context.Context, dir string, j newsget.Job) (*newsget.Summary, error) {
		c := *cfg
		c.DownloadDir = dir
		e, err := newsget.New(&c, opts)
		if err != nil {
			return nil, err
		}
		defer e.Close()
		return e.Download(ctx, []newsget.Job{j})
	}
}
