package parity

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/newsflow/newsflow/proto/par2"
	"github.com/newsflow/newsflow/spoolfs"
)

// batchBytes is about how much input one batch of the syndrome pass reads
// before the workers go over it.
const batchBytes = 32 << 20

// maxWindow bounds the stretch of a slice one pass works on, so huge
// slices do not make the input batches huge.
const maxWindow = 16 << 20

// Repair rebuilds the slices rep found missing or damaged and writes them
// into the files in place, then checks every repaired file's whole MD5
// and returns a fresh report. Repair in place is safe: the slices it
// writes were wrong already, the good ones are not touched, and a repair
// cut short leaves a file that is still repairable.
//
// The work (see par2.Plan): the syndromes S_j start as the chosen
// recovery slices; every present input slice, read once in batches, is
// multiplied into all of them (accumulate: workers each take tiles of the
// slice length); then S is multiplied by the inverse matrix (multiply),
// giving the missing slices. When k slices do not fit in Options.Memory,
// this runs once per window of the slice length.
func (s *Set) Repair(ctx context.Context, rep *Report, o Options) (*Report, error) {
	if rep.Whole() {
		return rep, nil
	}
	plan, err := s.Plan(rep.Missing)
	if err != nil {
		return nil, fmt.Errorf("par2: repair: %w", err)
	}
	k := len(plan.Missing)
	mem := o.Memory
	if mem <= 0 {
		mem = 1 << 30
	}
	window := min(int64(s.SliceSize), maxWindow)
	if k > 0 && int64(k)*window > mem {
		window = max(mem/int64(k)&^(tile-1), tile)
	}
	files, err := s.openForRepair(rep)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	vols := make([]*os.File, len(s.Volumes))
	defer func() {
		for _, v := range vols {
			if v != nil {
				v.Close()
			}
		}
	}()
	for _, u := range plan.Use {
		if vols[u.Volume] == nil {
			if vols[u.Volume], err = os.Open(s.Volumes[u.Volume]); err != nil {
				return nil, fmt.Errorf("par2: repair: %w", err)
			}
		}
	}
	missing := map[int]bool{}
	for _, m := range plan.Missing {
		missing[m] = true
	}
	var present []int
	for i := range s.Slices {
		if !missing[i] {
			present = append(present, i)
		}
	}
	syn := make([][]byte, k)
	for j := range syn {
		syn[j] = make([]byte, window)
	}
	for a := int64(0); k > 0 && a < int64(s.SliceSize); a += window {
		n := min(window, int64(s.SliceSize)-a)
		win := make([][]byte, k)
		for j, u := range plan.Use {
			win[j] = syn[j][:n]
			if _, err := vols[u.Volume].ReadAt(win[j], u.Offset+a); err != nil {
				return nil, fmt.Errorf("par2: repair: reading recovery slice %d: %w", u.Exponent, err)
			}
		}
		if err := s.syndromes(ctx, win, plan, present, files, a, o); err != nil {
			return nil, err
		}
		multiply(win, plan.Inverse, o.workers())
		// Write each rebuilt window where it belongs, clipped to the file.
		for m, i := range plan.Missing {
			fi, off, fn := s.Slice(i)
			if a >= int64(fn) {
				continue
			}
			if _, err := files[fi].WriteAt(win[m][:min(n, int64(fn)-a)], off+a); err != nil {
				return nil, fmt.Errorf("par2: repair %s: %w", s.Files[fi].Name, err)
			}
		}
	}
	// Truncate what is too long, make it durable, and check whole MD5s,
	// a file per worker.
	var todo []int
	for i := range s.Files {
		if !rep.Files[i].Whole() {
			todo = append(todo, i)
		}
	}
	errs := make([]error, len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(o.workers(), len(todo)) {
		wg.Go(func() {
			for {
				n := int(next.Add(1) - 1)
				if n >= len(todo) {
					return
				}
				errs[n] = finish(files[todo[n]], &s.Files[todo[n]])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := spoolfs.SyncDir(s.Dir); err != nil {
		return nil, err
	}
	out := &Report{Files: slices.Clone(rep.Files), Read: rep.Read, Quick: rep.Quick, Renamed: rep.Renamed}
	for i := range out.Files {
		out.Files[i].Missing, out.Files[i].Damaged, out.Files[i].TooLong = false, nil, false
	}
	return out, nil
}

// finish cuts a repaired file to its length, syncs it and checks its
// whole MD5.
func finish(h *os.File, f *par2.File) error {
	if err := h.Truncate(int64(f.Length)); err != nil {
		return fmt.Errorf("par2: repair %s: %w", f.Name, err)
	}
	if err := h.Sync(); err != nil {
		return fmt.Errorf("par2: repair %s: %w", f.Name, err)
	}
	sum := md5.New()
	if _, err := io.Copy(sum, io.NewSectionReader(h, 0, int64(f.Length))); err != nil {
		return fmt.Errorf("par2: repair %s: %w", f.Name, err)
	}
	if [16]byte(sum.Sum(nil)) != f.MD5 {
		return fmt.Errorf("par2: repair %s: rebuilt file does not match its MD5", f.Name)
	}
	return nil
}

// openForRepair opens every protected file for reading, and those to
// repair for writing too (creating missing ones and their directories).
func (s *Set) openForRepair(rep *Report) ([]*os.File, error) {
	files := make([]*os.File, len(s.Files))
	for i, f := range s.Files {
		path := filepath.Join(s.Dir, filepath.FromSlash(f.Name))
		var err error
		if rep.Files[i].Whole() {
			files[i], err = os.Open(path)
		} else {
			if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
				files[i], err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
			}
		}
		if err != nil {
			for _, h := range files[:i] {
				h.Close()
			}
			return nil, fmt.Errorf("par2: repair: %w", err)
		}
	}
	return files, nil
}

// syndromes multiplies every present input slice's window [a, a+len) into
// syn. A reader goroutine fills one batch of buffers while the workers go
// over the other.
func (s *Set) syndromes(ctx context.Context, syn [][]byte, plan *par2.Plan, present []int, files []*os.File, a int64, o Options) error {
	n := int64(len(syn[0]))
	per := max(1, int(batchBytes/n))
	type batch struct {
		idx  []int
		bufs [][]byte
		err  error
	}
	free := make(chan *batch, 2)
	for range 2 {
		b := &batch{bufs: make([][]byte, per)}
		for i := range b.bufs {
			b.bufs[i] = make([]byte, n)
		}
		free <- b
	}
	full := make(chan *batch, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(full)
		for start := 0; start < len(present); start += per {
			var b *batch
			select {
			case b = <-free:
			case <-done:
				return
			}
			b.idx = present[start:min(start+per, len(present))]
			for x, i := range b.idx {
				fi, off, fn := s.Slice(i)
				buf := b.bufs[x]
				got := 0
				if a < int64(fn) {
					var err error
					got, err = files[fi].ReadAt(buf[:min(n, int64(fn)-a)], off+a)
					if err != nil && !errors.Is(err, io.EOF) {
						b.err = fmt.Errorf("par2: repair: reading %s: %w", s.Files[fi].Name, err)
					}
				}
				clear(buf[got:]) // the zero padding past the file's end
			}
			select {
			case full <- b:
			case <-done:
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	coef := make([][]uint16, len(plan.Use))
	for b := range full {
		if b.err != nil {
			return b.err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		for j, u := range plan.Use {
			coef[j] = coef[j][:0]
			for _, i := range b.idx {
				coef[j] = append(coef[j], par2.Coefficient(i, u.Exponent))
			}
		}
		accumulate(syn, b.bufs[:len(b.idx)], coef, o.workers())
		free <- b
	}
	return nil
}
