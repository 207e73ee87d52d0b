// Package unpack extracts the archives of a finished download (RAR 4 and 5
// with their volumes, 7-Zip, zip) into the folder they were downloaded to,
// and removes the archives and PAR2 files once every archive is unpacked
// and verified.
//
// Theory of operation. Dir lists the folder and groups archive volumes
// into Sets by name (sets.go). Each set is read with its format's library
// (formats.go) into a hidden staging folder beside the output,
// ".newsget-unpack-NAME": every entry name is checked and sanitised
// (EntryPath refuses absolute paths and ".."; links are skipped, never
// created), every file is written, checked against the archive's CRC-32
// and size, and fsynced. Only when the whole archive has been read without
// error are the files renamed into place (one rename each, same file
// system, so a full disk cannot leave half a file under a final name), and
// the directories that received them fsynced. A file that already exists
// with the same contents counts as unpacked (a re-run); one that differs
// is never replaced, and the archive fails. Any failure removes the staging
// folder and leaves the archives where they are. Stale staging folders from
// a crash are removed when Dir starts.
//
// A RAR set can also be extracted while it downloads (Direct, direct.go):
// the same reader and staging folder, volumes opened as they arrive
// complete; Dir then only renames what a Direct staged.
//
// Limits: at most MaxEntries entries per archive, and at most as many
// bytes as the least of MaxBytes, MaxRatio times the archive's volumes
// but at least MinLimit (an archive bomb: a small zip of a gigabyte of
// zeros) and the free
// space of the folder's disk less KeepFree; an entry that declares more
// is refused before a byte of it is written, one that turns out longer is
// cut at the limit, and either way the staging folder goes. The RAR
// decoder's window is bounded (maxRARDictionary); a 7z header is read by
// check7z (header7z.go) before the 7z library opens it, and refused if
// the library would allocate beyond fixed bounds for it; a full disk ends
// the archive with the write error.
package unpack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/spoolfs"
)

// DefaultMaxEntries is Options.MaxEntries when zero.
const DefaultMaxEntries = 100000

// DefaultMaxRatio is Options.MaxRatio when zero: a set of RAR volumes of
// a film unpacks to about its own size, text compresses some ten times;
// a thousandfold is an archive bomb.
const DefaultMaxRatio = 20

// KeepFree is the space an unpack leaves free on the disk.
const KeepFree = 64 << 20

// MinLimit is the least an archive may unpack to whatever MaxRatio says:
// a small archive of text may well hold a few megabytes.
const MinLimit = 64 << 20

// stagePrefix starts the name of an archive's staging folder.
const stagePrefix = ".newsget-unpack-"

// Options say what Dir unpacks and what it does afterwards.
type Options struct {
	// Password opens encrypted RAR and 7z archives.
	Password string
	// Cleanup removes the archive volumes and PAR2 files after every
	// archive was unpacked and verified.
	Cleanup bool
	// Verified says the folder's files were verified whole against their
	// PAR2 sets: with Cleanup, the PAR2 files go also where there is no
	// archive (a release of plain files), as SABnzbd removes them.
	Verified bool
	// Files, when not nil, limits Dir to these names in the folder (one
	// job's files in a shared download folder); nil means every file.
	Files []string
	// MaxEntries bounds the entries of one archive (DefaultMaxEntries
	// when zero); MaxBytes bounds the bytes unpacked from one archive
	// (no bound of its own when zero); MaxRatio bounds them to that many
	// times the archive's volumes (DefaultMaxRatio when zero). Free space
	// bounds them in any case.
	MaxEntries int
	MaxBytes   int64
	MaxRatio   int
	// Direct are the job's direct unpacks (StartDirect): a set one of
	// them read whole, and whose volumes are the ones it read, is
	// renamed into place from its staging folder, not extracted again.
	Direct []*Direct
}

// Archive is what became of one archive.
type Archive struct {
	Name    string   // its first volume
	Volumes []string // every volume
	Files   []string // unpacked, relative to the folder, in archive order
	Present []string // of Files, those already there with the same contents
	Skipped []string // links, never created
	Bytes   int64    // bytes written
	Err     error    // nil when unpacked and verified
}

// Result is what Dir did.
type Result struct {
	Archives []Archive
	Removed  []string // volumes and PAR2 files removed by Cleanup
}

// OK reports whether every archive was unpacked and verified.
func (r *Result) OK() bool {
	for _, a := range r.Archives {
		if a.Err != nil {
			return false
		}
	}
	return true
}

// Dir unpacks every archive found in dir into dir. Failures of single
// archives are in Result.Archives[i].Err; the error is for the folder as a
// whole (it cannot be read) or a failed cleanup.
func Dir(ctx context.Context, dir string, opts Options) (*Result, error) {
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.MaxRatio <= 0 {
		opts.MaxRatio = DefaultMaxRatio
	}
	list, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("unpack: %w", err)
	}
	var want map[string]bool
	if opts.Files != nil {
		want = map[string]bool{}
		for _, f := range opts.Files {
			want[f] = true
		}
	}
	var names []string
	for _, de := range list {
		if de.IsDir() && strings.HasPrefix(de.Name(), stagePrefix) && !isStageOf(opts, de.Name()) {
			// Left by a crash in the middle of an unpack; its archive
			// is still here and is unpacked again below.
			if err := os.RemoveAll(filepath.Join(dir, de.Name())); err != nil {
				return nil, fmt.Errorf("unpack: remove stale %s: %w", de.Name(), err)
			}
			continue
		}
		if de.Type().IsRegular() && (want == nil || want[de.Name()]) {
			names = append(names, de.Name())
		}
	}
	res := &Result{}
	for _, s := range Sets(names) {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("unpack: %w", err)
		}
		res.Archives = append(res.Archives, unpackSet(ctx, dir, s, opts))
	}
	if !opts.Cleanup || (len(res.Archives) == 0 && !opts.Verified) || !res.OK() {
		return res, nil
	}
	var remove []string
	for _, a := range res.Archives {
		remove = append(remove, a.Volumes...)
	}
	for _, n := range names {
		if strings.HasSuffix(strings.ToLower(n), ".par2") {
			remove = append(remove, n)
		}
	}
	for _, n := range remove {
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("unpack: cleanup: %w", err)
		}
		res.Removed = append(res.Removed, n)
	}
	if err := spoolfs.SyncDir(dir); err != nil {
		return res, fmt.Errorf("unpack: cleanup: %w", err)
	}
	return res, nil
}

// unpackSet extracts one archive into a staging folder and, when it was
// read whole and verified, renames its files into dir.
func unpackSet(ctx context.Context, dir string, s Set, opts Options) Archive {
	a := Archive{Name: s.First(), Volumes: s.Volumes}
	if s.Problem != "" {
		a.Err = fmt.Errorf("unpack %s: %s", a.Name, s.Problem)
		return a
	}
	stage := filepath.Join(dir, stagePrefix+newsget.SanitizeName(a.Name, "archive"))
	if d := directFor(opts, a.Name); d != nil {
		if x, ok := d.take(s); ok {
			// Extracted and verified during the download: only the
			// renames are left.
			defer os.RemoveAll(stage)
			x.a = &a
			a.Files, a.Bytes, a.Skipped = d.a.Files, d.a.Bytes, d.a.Skipped
			if err := x.commit(dir); err != nil {
				a.Err = fmt.Errorf("unpack %s: %w", a.Name, err)
			}
			return a
		}
	}
	if err := os.RemoveAll(stage); err != nil {
		a.Err = fmt.Errorf("unpack %s: %w", a.Name, err)
		return a
	}
	if err := os.Mkdir(stage, 0o755); err != nil {
		a.Err = fmt.Errorf("unpack %s: %w", a.Name, err)
		return a
	}
	defer os.RemoveAll(stage)
	x := &extraction{ctx: ctx, stage: stage, opts: opts, a: &a, seen: map[string]bool{}}
	x.limit, x.limitWhy = archiveLimit(dir, volumesSize(dir, s.Volumes), opts)
	if err := walk(s.Format, filepath.Join(dir, a.Name), opts.Password, opts.MaxEntries, x.add); err != nil {
		a.Err = fmt.Errorf("unpack %s: %w", a.Name, err)
		return a
	}
	if err := x.commit(dir); err != nil {
		a.Err = fmt.Errorf("unpack %s: %w", a.Name, err)
	}
	return a
}

// extraction is one archive being written into its staging folder.
type extraction struct {
	ctx      context.Context
	stage    string
	opts     Options
	a        *Archive
	dirs     []string // directory entries, relative
	seen     map[string]bool
	entries  int
	limit    int64  // bytes the archive may unpack to
	limitWhy string // what sets limit, for the error
	// syncEvery, when positive, fdatasyncs a file every that many bytes
	// written (a direct unpack: so that little is left to flush when
	// the last volume arrives).
	syncEvery int64
}

// volumesSize adds up the sizes of the volumes in dir.
func volumesSize(dir string, volumes []string) int64 {
	var vol int64
	for _, v := range volumes {
		if st, err := os.Stat(filepath.Join(dir, v)); err == nil {
			vol += st.Size()
		}
	}
	return vol
}

// archiveLimit is the most bytes an archive of vol bytes of volumes in
// dir may unpack to, and what sets that bound.
func archiveLimit(dir string, vol int64, opts Options) (int64, string) {
	limit, why := int64(math.MaxInt64), ""
	if vol <= math.MaxInt64/int64(opts.MaxRatio) {
		limit = max(vol*int64(opts.MaxRatio), MinLimit)
		why = fmt.Sprintf("%d times its volumes' %d bytes (unpack_max_ratio), at least %d: an archive bomb?", opts.MaxRatio, vol, int64(MinLimit))
	}
	if opts.MaxBytes > 0 && opts.MaxBytes < limit {
		limit, why = opts.MaxBytes, fmt.Sprintf("the limit of %d bytes", opts.MaxBytes)
	}
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil {
		free := int64(st.Bavail) * int64(st.Bsize)
		if room := max(free-KeepFree, 0); room < limit {
			limit, why = room, fmt.Sprintf("the %d bytes free on the disk (less %d kept free)", free, KeepFree)
		}
	}
	return limit, why
}

// add writes one entry into the staging folder: the walkFunc of walk.
func (x *extraction) add(e entry, r io.Reader) error {
	if err := x.ctx.Err(); err != nil {
		return err
	}
	if x.entries++; x.entries > x.opts.MaxEntries {
		return fmt.Errorf("more than %d entries", x.opts.MaxEntries)
	}
	rel, err := EntryPath(e.name)
	if err != nil {
		return err
	}
	if e.link {
		x.a.Skipped = append(x.a.Skipped, rel)
		return nil
	}
	if e.dir {
		x.dirs = append(x.dirs, rel)
		return os.MkdirAll(filepath.Join(x.stage, rel), 0o755)
	}
	if x.seen[rel] {
		return fmt.Errorf("entry %q: a second entry with the same name", e.name)
	}
	left := x.limit - x.a.Bytes
	if e.size > left {
		return fmt.Errorf("entry %q of %d bytes: %w, %s", e.name, e.size, errTooBig, x.limitWhy)
	}
	x.seen[rel] = true
	path := filepath.Join(x.stage, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	h := crc32.NewIEEE()
	var w io.Writer = f
	if x.syncEvery > 0 {
		w = &syncingWriter{f: f, every: x.syncEvery}
	}
	n, err := copyLimited(io.MultiWriter(w, h), ctxReader{x.ctx, r}, left)
	x.a.Bytes += n
	if errors.Is(err, errTooBig) {
		err = fmt.Errorf("%w, %s", err, x.limitWhy)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return fmt.Errorf("entry %q: %w", e.name, err)
	case e.size >= 0 && n != e.size:
		return fmt.Errorf("entry %q: %d bytes, the archive says %d", e.name, n, e.size)
	case e.hasCRC && h.Sum32() != e.crc:
		return fmt.Errorf("entry %q: %w: %08x, the archive says %08x", e.name, errCRC, h.Sum32(), e.crc)
	}
	x.a.Files = append(x.a.Files, rel)
	return nil
}

// syncingWriter writes to f, fdatasyncing it every so many bytes.
type syncingWriter struct {
	f       *os.File
	every   int64
	pending int64 // written since the last sync
}

func (s *syncingWriter) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	if s.pending += int64(n); err == nil && s.pending >= s.every {
		s.pending = 0
		err = unix.Fdatasync(int(s.f.Fd()))
	}
	return n, err
}

// ctxReader stops reading once its context ends: a deleted job, or a
// direct unpack given up, stops within the entry being copied.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// errCRC is a file whose contents do not match the archive's CRC-32.
var errCRC = errors.New("CRC-32 mismatch")

// errTooBig ends an archive that unpacks to more than its limit.
var errTooBig = errors.New("the archive unpacks to more than its limit")

// copyLimited copies r to w, failing with errTooBig after limit bytes.
func copyLimited(w io.Writer, r io.Reader, limit int64) (int64, error) {
	n, err := io.Copy(w, io.LimitReader(r, limit+1))
	if err == nil && n > limit {
		return n, errTooBig
	}
	return n, err
}

// commit renames the staged files into dir: first every check (nothing
// moved if one fails), then the renames, then an fsync of each directory
// that received a file.
func (x *extraction) commit(dir string) error {
	same := map[string]bool{}
	for _, rel := range x.a.Files {
		dst := filepath.Join(dir, rel)
		if err := noLinkBetween(dir, rel); err != nil {
			return err
		}
		st, err := os.Lstat(dst)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s exists and is not a file; not replaced", rel)
		}
		eq, err := sameContents(dst, filepath.Join(x.stage, rel))
		if err != nil {
			return err
		}
		if !eq {
			return fmt.Errorf("%s exists and differs from the archive's; not overwritten", rel)
		}
		same[rel] = true
	}
	for _, rel := range x.dirs {
		if err := os.MkdirAll(filepath.Join(dir, rel), 0o755); err != nil {
			return err
		}
	}
	synced := map[string]bool{}
	for _, rel := range x.a.Files {
		if same[rel] {
			x.a.Present = append(x.a.Present, rel)
			continue
		}
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(x.stage, rel), dst); err != nil {
			return err
		}
		synced[filepath.Dir(dst)] = true
	}
	dirs := make([]string, 0, len(synced))
	for d := range synced {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		if err := spoolfs.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// noLinkBetween refuses a destination whose parent directories inside dir
// include a symbolic link, which would carry the file out of dir.
func noLinkBetween(dir, rel string) error {
	p := dir
	parts := strings.Split(filepath.Dir(rel), string(filepath.Separator))
	for _, c := range parts {
		if c == "." {
			continue
		}
		p = filepath.Join(p, c)
		st, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if st.Mode()&os.ModeSymlink != 0 || !st.IsDir() {
			return fmt.Errorf("%s: %s is not a directory; not followed", rel, p)
		}
	}
	return nil
}

// sameContents reports whether two files hold the same bytes.
func sameContents(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		aEnd := ea == io.EOF || ea == io.ErrUnexpectedEOF
		bEnd := eb == io.EOF || eb == io.ErrUnexpectedEOF
		switch {
		case ea != nil && !aEnd:
			return false, ea
		case eb != nil && !bEnd:
			return false, eb
		case aEnd || bEnd:
			return aEnd && bEnd, nil
		}
	}
}
