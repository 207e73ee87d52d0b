package parity

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/newsflow/newsflow/proto/par2"
)

// Options tune Verify and Repair.
type Options struct {
	// Workers is how many goroutines hash and compute (default GOMAXPROCS).
	Workers int
	// Known holds CRC-32s of byte ranges known from the download (yEnc
	// part CRCs), by the file's name in the set or the name it was
	// downloaded under (when Verify renames it). A file whose ranges agree
	// with its slice CRCs is verified without being read; only the slices
	// they cannot confirm are read.
	Known map[string][]par2.RangeCRC
	// NoRename leaves files found under other names (identified by the
	// MD5 of their first 16 KiB) where they are; by default they are
	// renamed to the name in the set.
	NoRename bool
	// Memory bounds the bytes Repair holds for slices being rebuilt
	// (default 1 GiB); beyond it the slices are rebuilt a window at a time.
	Memory int64
}

func (o Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// A FileResult is what Verify found for one protected file.
type FileResult struct {
	Name        string
	RenamedFrom string // the name it was found under, when renamed
	Missing     bool   // no such file (all its slices are missing)
	Damaged     []int  // slices (within the file) that do not match
	TooLong     bool   // longer than the set says: repair truncates it
	Quick       bool   // confirmed from known CRCs, not read
	Read        int64  // bytes read to verify it
}

// Whole reports whether the file is intact.
func (r *FileResult) Whole() bool { return !r.Missing && len(r.Damaged) == 0 && !r.TooLong }

// A Report is the result of Verify.
type Report struct {
	Files   []FileResult // in the set's order
	Missing []int        // input slices (global index) to rebuild, ascending
	Read    int64        // bytes read in all
	Quick   int          // files verified from known CRCs without reading
	Renamed int
}

// Whole reports whether every protected file is intact.
func (r *Report) Whole() bool {
	for i := range r.Files {
		if !r.Files[i].Whole() {
			return false
		}
	}
	return true
}

// Verify checks every protected file against the set: files missing under
// their name are looked for under others (MD5 of the first 16 KiB, as
// obfuscated posts need) and renamed; each slice's MD5 and CRC-32 find the
// damaged ones. Slices are hashed by Options.Workers goroutines.
//
// A file is whole when its length is right and every slice's MD5 and
// CRC-32 match; its whole-file MD5 would add nothing to that but a second
// pass, so Verify leaves it to Repair, which checks the whole MD5 of
// every file it rebuilt.
func (s *Set) Verify(ctx context.Context, o Options) (*Report, error) {
	rep := &Report{Files: make([]FileResult, len(s.Files))}
	if err := s.findRenamed(rep, o); err != nil {
		return nil, err
	}
	type job struct{ file, slice int }
	var jobs []job
	handles := make([]*os.File, len(s.Files))
	defer func() {
		for _, h := range handles {
			if h != nil {
				h.Close()
			}
		}
	}()
	for i := range s.Files {
		f, r := &s.Files[i], &rep.Files[i]
		r.Name = f.Name
		h, err := os.Open(filepath.Join(s.Dir, filepath.FromSlash(f.Name)))
		if errors.Is(err, fs.ErrNotExist) {
			r.Missing = true
			continue
		} else if err != nil {
			return nil, fmt.Errorf("par2: verify: %w", err)
		}
		handles[i] = h
		st, err := h.Stat()
		if err != nil {
			return nil, fmt.Errorf("par2: verify: %w", err)
		}
		r.TooLong = uint64(st.Size()) > f.Length
		todo := allSlices(len(f.Slices))
		known, ok := o.Known[f.Name]
		if !ok && r.RenamedFrom != "" {
			known, ok = o.Known[r.RenamedFrom] // downloaded under an obfuscated name
		}
		if ok && uint64(st.Size()) == f.Length {
			todo = par2.CheckRanges(f, s.SliceSize, known)
			r.Quick = len(todo) == 0
		}
		for _, sl := range todo {
			jobs = append(jobs, job{i, sl})
		}
	}
	// Workers take slices in order; each reads its slice, pads it and
	// compares MD5 and CRC-32.
	var next atomic.Int64
	var mu sync.Mutex
	var firstErr error
	damaged := make([][]bool, len(s.Files))
	for i := range damaged {
		damaged[i] = make([]bool, len(s.Files[i].Slices))
	}
	read := make([]int64, len(s.Files))
	var wg sync.WaitGroup
	for range min(o.workers(), max(len(jobs), 1)) {
		wg.Go(func() {
			buf := make([]byte, min(s.SliceSize, hashChunk))
			for {
				n := int(next.Add(1) - 1)
				if n >= len(jobs) || ctx.Err() != nil {
					return
				}
				j := jobs[n]
				f := &s.Files[j.file]
				_, off, want := s.Slice(f.First + j.slice)
				got, sum, crc, err := hashSlice(handles[j.file], off, want, int64(s.SliceSize), buf)
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, fmt.Errorf("par2: verify %s: %w", f.Name, err))
					mu.Unlock()
					return
				}
				sums := f.Slices[j.slice]
				// A slice must find all its file bytes: the zeros a short
				// read leaves could otherwise match a slice of zeros.
				bad := got < int64(want) || crc != sums.CRC32 || sum != sums.MD5
				mu.Lock()
				damaged[j.file][j.slice] = bad
				read[j.file] += int64(got)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i := range s.Files {
		f, r := &s.Files[i], &rep.Files[i]
		r.Read = read[i]
		rep.Read += read[i]
		if r.Quick {
			rep.Quick++
		}
		for sl := range f.Slices {
			if r.Missing || damaged[i][sl] {
				if !r.Missing {
					r.Damaged = append(r.Damaged, sl)
				}
				rep.Missing = append(rep.Missing, f.First+sl)
			}
		}
	}
	return rep, nil
}

// hashChunk is how much of a slice a worker reads at a time, so a set
// with huge slices cannot make it hold one whole.
const hashChunk = 1 << 20

var zeros [hashChunk]byte

// hashSlice reads the want file bytes of a slice at off (fewer if the file
// is short), pads them with zeros to size and returns how many it read,
// their MD5 and CRC-32.
func hashSlice(h *os.File, off int64, want int, size int64, buf []byte) (got int64, sum [16]byte, crc uint32, err error) {
	m := md5.New()
	for got < int64(want) {
		n, err := h.ReadAt(buf[:min(int64(len(buf)), int64(want)-got)], off+got)
		m.Write(buf[:n])
		crc = crc32.Update(crc, crc32.IEEETable, buf[:n])
		got += int64(n)
		if err == io.EOF {
			break
		} else if err != nil {
			return got, sum, crc, err
		}
	}
	for pad := size - got; pad > 0; {
		z := zeros[:min(pad, hashChunk)]
		m.Write(z)
		crc = crc32.Update(crc, crc32.IEEETable, z)
		pad -= int64(len(z))
	}
	return got, [16]byte(m.Sum(nil)), crc, nil
}

func cmpErr(old, e error) error {
	if old != nil {
		return old
	}
	return e
}

func allSlices(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// maxCandidates bounds the files findRenamed looks at.
const maxCandidates = 10000

// findRenamed looks for protected files absent under their own name among
// the other files of the directory, by length-independent identity: the
// MD5 of their first 16 KiB, and renames what it finds to the set's name
// (not with Options.NoRename).
func (s *Set) findRenamed(rep *Report, o Options) error {
	want := map[[16]byte]int{}
	named := map[string]bool{}
	for i, f := range s.Files {
		named[f.Name] = true
		if _, err := os.Lstat(filepath.Join(s.Dir, filepath.FromSlash(f.Name))); errors.Is(err, fs.ErrNotExist) && f.Length > 0 {
			want[f.MD5_16] = i
		}
	}
	if len(want) == 0 || o.NoRename {
		return nil
	}
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return fmt.Errorf("par2: verify: %w", err)
	}
	if len(entries) > maxCandidates {
		entries = entries[:maxCandidates]
	}
	buf := make([]byte, 16384)
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || named[name] || strings.HasSuffix(strings.ToLower(name), ".par2") {
			continue
		}
		path := filepath.Join(s.Dir, name)
		h, err := os.Open(path)
		if err != nil {
			continue
		}
		n, _ := io.ReadFull(h, buf)
		h.Close()
		// The MD5 covers min(16 KiB, length) bytes, so a candidate's first
		// n bytes are what to hash either way.
		i, ok := want[md5.Sum(buf[:n])]
		if !ok {
			continue
		}
		f := &s.Files[i]
		if err := os.Rename(path, filepath.Join(s.Dir, filepath.FromSlash(f.Name))); err != nil {
			return fmt.Errorf("par2: verify: renaming %s to %s: %w", name, f.Name, err)
		}
		rep.Files[i].RenamedFrom = name
		rep.Renamed++
		delete(want, f.MD5_16)
		if len(want) == 0 {
			break
		}
	}
	return nil
}
