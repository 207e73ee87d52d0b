package newsget

// Output files. Each file of an NZB is written as NAME.part in the
// download directory, NAME being the sanitised name from the NZB subject.
// Decoded bytes go straight from the connection's Data events to WriteAt
// at the part's offset; nothing is buffered. Every write is bounds-checked:
// before the first part tells the file's size (yEnc =ybegin size=), against
// a bound the NZB implies (the sum of its articles' sizes, which the decoded
// file cannot exceed); after, against that size, and, once the parts are
// known to be of one size (the usual layout), against the range segment n
// must fill. A write that breaks a check is not made and its segment is
// reported corrupt, so a lying server cannot scribble over other parts or
// grow a sparse file of any size.
//
// When every segment is done the file is verified (parts cover the whole
// size, the CRC-32 of the file equals =yend crc32= when a part gave it,
// computed by combining part CRCs or, after a resume, by reading the file)
// and renamed to its final name (yEnc name=, sanitised, or the NZB name).
// A file with missing segments stays NAME.part, with NAME.incomplete beside
// it listing the missing segments and byte ranges.

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/newsflow/newsflow/machine/download"
	"github.com/newsflow/newsflow/machine/jobs"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/spoolfs"
)

// MaxMissingListed is how many missing segments of one file are named one
// by one on the console (the summary, the log) and in the job queue; the
// file's .incomplete sidecar lists every one.
const MaxMissingListed = 20

// maxPartBound bounds a file whose NZB gives no article sizes: this much per
// segment (yEnc parts are usually under 1 MiB).
const maxPartBound = 64 << 20

// partInfo is a part verified in this run.
type partInfo struct {
	off, size int64
	crc       uint32
}

// outFile is one file of an NZB being downloaded.
type outFile struct {
	key      int // download.Key.File: index in Engine.files
	job      *jobRun
	idx      int            // index in the NZB
	nzb      *proto.NZBFile // its Segments are dropped once the Scheduler has them (Engine.Download)
	segments int            // len(nzb.Segments) as parsed
	nzbName  string         // sanitised name from the subject
	reserved string         // nzbName, or with a suffix when another file of the job has it
	partPath string
	dir      string

	mu        sync.Mutex
	f         *os.File
	bound     int64 // writes must end within this (size once known)
	info      fileInfo
	sizeKnown bool
	regular   bool // parts follow info.PartSize; false when they do not or it is not known
	irregular bool // a part broke the regular layout: do not guess ranges
	infoDirty bool // info changed since saved
	parts     map[int]partInfo
	bad       map[int]string // segments whose data broke a check in this attempt
	// written counts the bytes of each segment in flight that reached the
	// file in this attempt; unwritten holds segments some of whose bytes
	// did not (a failed WriteAt: disk full). Either keeps a segment from
	// being reported done (check).
	written   map[int]int64
	unwritten map[int]string
	prior     jobs.Segments // done in an earlier run
	wrote     bool          // bytes written since the last fdatasync

	// Under Engine.mu:
	remaining   int   // segments neither done nor failed
	pendingDone []int // done, not yet durable
	pendingMiss []jobs.Missing
	missing     []jobs.Missing // in the order they failed (a segment fails once); 24 bytes each
	finished    bool
	refused     string // not downloaded at all, and why
	result      *FileResult
}

// FileResult is what became of one file.
type FileResult struct {
	Job      string // the NZB
	Index    int    // the file's place in the NZB
	Name     string // final file name (or NAME.part when incomplete)
	Path     string
	Size     int64 // bytes, when known
	Complete bool  // every segment arrived and the file verified
	Already  bool  // complete from an earlier run: nothing fetched
	Removed  bool  // and since removed by cleanup after unpacking
	// Missing lists the segments no server had, with their byte ranges
	// (End 0 when the range is unknown).
	Missing  []jobs.Missing
	Segments int
	Err      string // why it is not complete, in words
	// Parts are the yEnc parts verified in this run (offset, size and
	// part CRC-32, sorted by offset), complete or not: post-processing
	// verifies a file against its PAR2 set from these without reading it.
	Parts []PartCRC
	// Held: a PAR2 recovery volume held back (Job.HoldRecovery), not
	// fetched; Source is its NZB entry, to fetch it by if repair needs it.
	Held   bool
	Source *proto.NZBFile
}

// PartCRC is the CRC-32 of a byte range of a file, from a yEnc part.
type PartCRC struct {
	Offset, Size int64
	CRC32        uint32
}

// claimPart opens the file's .part (openPart) and, unless an earlier run
// of the job claimed it already, records in the file's info (at ipath)
// that this job created it, so that a rerun may reopen it. Either way the
// claim is in o.info from here on: every later write of the info keeps it.
func (o *outFile) claimPart(ipath string, resume, overwrite bool) error {
	fi, _ := readInfo(ipath)
	ours := fi.Part == filepath.Base(o.partPath)
	if err := o.openPart(resume, ours, overwrite); err != nil {
		return err
	}
	o.info.Part = filepath.Base(o.partPath)
	if ours {
		return nil
	}
	fi.Part = o.info.Part
	if err := saveInfo(ipath, fi); err != nil {
		o.f.Close()
		o.f = nil
		return err
	}
	return nil
}

// openPart opens (creating, or reopening for a resume) the file's .part.
// A .part is never opened through a symbolic link (O_NOFOLLOW), and one
// the job queue does not know as ours (ours: the job was queued by an
// earlier run) is created with O_EXCL: somebody else's NAME.part, or a
// link planted to send the download elsewhere, is neither truncated nor
// written through; with overwrite it is removed (the link, not what it
// points to) and created afresh. An empty one is taken over (openEmpty).
func (o *outFile) openPart(resume, ours, overwrite bool) error {
	flags := os.O_RDWR | os.O_CREATE | syscall.O_NOFOLLOW
	switch {
	case resume:
	case ours:
		flags |= os.O_TRUNC
	default:
		flags |= os.O_EXCL
		if overwrite {
			if err := os.Remove(o.partPath); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("newsget: remove %s: %w", o.partPath, err)
			}
		}
	}
	f, err := os.OpenFile(o.partPath, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		f, err = openEmpty(o.partPath)
	}
	switch {
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%s exists and is not from this job; not overwritten (use -overwrite)", filepath.Base(o.partPath))
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s is a symbolic link; not followed", filepath.Base(o.partPath))
	case err != nil:
		return fmt.Errorf("newsget: open %s: %w", o.partPath, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("%s is not a regular file; not written", filepath.Base(o.partPath))
	}
	o.f = f
	return nil
}

// openEmpty opens an existing path for writing when it is an empty
// regular file, and answers fs.ErrExist otherwise. An empty NAME.part that
// no job marked as its own is what a run killed between creating its .part
// and recording the claim leaves; it holds nothing to lose, so taking it
// over lets the job go on, where refusing it would leave the job stuck.
func openEmpty(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, err
		}
		return nil, fs.ErrExist
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() != 0 {
		f.Close()
		return nil, fs.ErrExist
	}
	return f, nil
}

// initBound sets the provisional bound from the NZB.
func (o *outFile) initBound() {
	var sum int64
	for _, s := range o.nzb.Segments {
		if s.Bytes <= 0 {
			sum = 0
			break
		}
		sum += s.Bytes
	}
	if sum == 0 {
		sum = int64(len(o.nzb.Segments)) * maxPartBound
	}
	o.bound = sum
}

// useInfo applies what an earlier run learned.
func (o *outFile) useInfo(fi fileInfo) {
	o.info.Part = fi.Part
	if fi.Size <= 0 || fi.Size > o.bound {
		return
	}
	o.info, o.sizeKnown, o.bound = fi, true, fi.Size
	o.regular = fi.PartSize > 0
}

// rangeOf returns the byte range segment n fills, when the layout is known.
func (o *outFile) rangeOf(n int) (begin, end int64, ok bool) {
	if !o.sizeKnown || !o.regular || o.irregular {
		return 0, 0, false
	}
	begin = int64(n-1) * o.info.PartSize
	end = min(begin+o.info.PartSize, o.info.Size)
	if begin >= end {
		return 0, 0, false
	}
	return begin, end, true
}

// write puts decoded bytes of segment n at off, after the checks the
// top of the file describes. It reports a write error (which aborts the
// connection); a failed check only marks the segment bad.
func (o *outFile) write(n int, off int64, p []byte) error {
	o.mu.Lock()
	end := off + int64(len(p))
	why := ""
	switch {
	case o.bad[n] != "":
		o.mu.Unlock()
		return nil
	case off < 0 || end > o.bound:
		why = fmt.Sprintf("data at %d-%d beyond the file's %d bytes", off, end, o.bound)
	default:
		if b, e, ok := o.rangeOf(n); ok && (off < b || end > e) {
			why = fmt.Sprintf("data at %d-%d outside segment %d's range %d-%d", off, end, n, b, e)
		}
	}
	if why != "" {
		if o.bad == nil {
			o.bad = map[int]string{}
		}
		o.bad[n] = why
		o.mu.Unlock()
		return nil
	}
	o.mu.Unlock()
	if _, err := o.f.WriteAt(p, off); err != nil {
		err = fmt.Errorf("newsget: write %s: %w", o.partPath, err)
		o.markUnwritten(n, err.Error())
		return err
	}
	// Marked after the write: syncData clears the mark before its fsync,
	// so a write that completes after that fsync began leaves the mark
	// for the next one (a segment is recorded done only after an fsync
	// that began after its last write).
	o.mu.Lock()
	o.wrote = true
	if o.written == nil {
		o.written = map[int]int64{}
	}
	o.written[n] += int64(len(p))
	o.mu.Unlock()
	return nil
}

// markUnwritten notes that bytes of segment n did not reach the file (a
// failed write, or data dropped after one): the segment must not be
// reported done in this attempt.
func (o *outFile) markUnwritten(n int, why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.unwritten == nil {
		o.unwritten = map[int]string{}
	}
	if o.unwritten[n] == "" {
		o.unwritten[n] = why
	}
}

// check validates a verified part against what the file is known to be
// and returns the outcome to report: OK, or Corrupt with the reason.
func (o *outFile) check(ok download.SegmentOK) (download.Outcome, string) {
	n := ok.Segment.Number
	o.mu.Lock()
	defer o.mu.Unlock()
	written, unwritten := o.written[n], o.unwritten[n]
	delete(o.written, n) // the next attempt starts clean
	delete(o.unwritten, n)
	if why := o.bad[n]; why != "" {
		delete(o.bad, n)
		return download.Corrupt, why
	}
	// The part decoded and verified, but its bytes are on disk only if
	// every write of them succeeded: a part some of whose bytes were lost
	// (disk full) goes back to waiting, like a broken connection, and is
	// never recorded done.
	if unwritten != "" {
		return download.ConnError, unwritten
	}
	if written != ok.Size {
		return download.ConnError, fmt.Sprintf("%d of the part's %d bytes written", written, ok.Size)
	}
	if ok.UU {
		if o.segments != 1 {
			return download.Corrupt, "UUencoded part of a multi-segment file (UU has no offsets)"
		}
		ok.FileSize = ok.Size
	}
	if ok.FileSize <= 0 {
		return download.Corrupt, "no file size in the yEnc header"
	}
	if !o.sizeKnown {
		if ok.FileSize > o.bound {
			return download.Corrupt, fmt.Sprintf("yEnc size=%d is more than the NZB's articles can hold (%d)", ok.FileSize, o.bound)
		}
		o.info.Size, o.sizeKnown, o.bound = ok.FileSize, true, ok.FileSize
		o.info.Name = ok.Name
		o.info.CRC32, o.info.HasCRC32 = ok.FileCRC, ok.HasFileCRC
		o.infoDirty = true
	}
	if ok.FileSize != o.info.Size {
		return download.Corrupt, fmt.Sprintf("yEnc size=%d, but earlier parts said %d", ok.FileSize, o.info.Size)
	}
	if ok.Offset < 0 || ok.Offset+ok.Size > o.info.Size {
		return download.Corrupt, fmt.Sprintf("part %d-%d beyond the file's %d bytes", ok.Offset, ok.Offset+ok.Size, o.info.Size)
	}
	if ok.HasFileCRC && !o.info.HasCRC32 {
		o.info.CRC32, o.info.HasCRC32, o.infoDirty = ok.FileCRC, true, true
	}
	o.learnLayout(n, ok.Offset, ok.Size)
	if o.parts == nil {
		o.parts = map[int]partInfo{}
	}
	o.parts[n] = partInfo{off: ok.Offset, size: ok.Size, crc: ok.CRC}
	return download.OK, ""
}

// learnLayout works out the part size from a verified part and notices a
// part that does not follow it.
func (o *outFile) learnLayout(n int, off, size int64) {
	if o.irregular {
		return
	}
	if o.info.PartSize == 0 {
		var p int64
		switch {
		case off+size < o.info.Size && off == int64(n-1)*size:
			p = size // a full part where the layout puts it
		case n > 1 && off%int64(n-1) == 0:
			p = off / int64(n-1)
		}
		if p <= 0 || size > p {
			return
		}
		o.info.PartSize, o.regular, o.infoDirty = p, true, true
		// Parts seen before must agree.
		for m, pi := range o.parts {
			if b, e, ok := o.rangeOf(m); !ok || pi.off != b || pi.off+pi.size != e {
				o.irregular = true
			}
		}
		return
	}
	if b, e, ok := o.rangeOf(n); !ok || off != b || off+size != e {
		o.irregular = true
	}
}

// missingRange returns the byte range of a missing segment, when the
// layout tells it.
func (o *outFile) missingRange(n int) jobs.Missing {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := jobs.Missing{Segment: n}
	if b, e, ok := o.rangeOf(n); ok {
		m.Begin, m.End = b, e
	}
	return m
}

// refineMissing gives missing segments whose range was not known when
// they failed (no part had told the layout yet) their range: from the
// layout, or, when every part arrived in this run, from the gaps the parts
// leave, matched to the missing segments in order. Called with mu held.
func (o *outFile) refineMissing() {
	fromGaps := o.sizeKnown && o.prior.Len() == 0 // the gaps between parts can tell the rest
	var unknown []int                             // indexes in o.missing
	for i, m := range o.missing {
		if m.End > m.Begin {
			continue
		}
		if b, e, ok := o.rangeOf(m.Segment); ok {
			o.missing[i] = jobs.Missing{Segment: m.Segment, Begin: b, End: e}
			continue
		}
		if fromGaps {
			unknown = append(unknown, i)
		}
	}
	if len(unknown) == 0 {
		return
	}
	ps := make([]partInfo, 0, len(o.parts))
	for _, p := range o.parts {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b partInfo) int { return int(a.off - b.off) })
	var gaps [][2]int64
	at := int64(0)
	for _, p := range ps {
		if p.off > at {
			gaps = append(gaps, [2]int64{at, p.off})
		}
		at = max(at, p.off+p.size)
	}
	if at < o.info.Size {
		gaps = append(gaps, [2]int64{at, o.info.Size})
	}
	if len(gaps) != len(unknown) {
		return
	}
	slices.SortFunc(unknown, func(a, b int) int { return o.missing[a].Segment - o.missing[b].Segment })
	for i, j := range unknown {
		o.missing[j] = jobs.Missing{Segment: o.missing[j].Segment, Begin: gaps[i][0], End: gaps[i][1]}
	}
}

// takeInfo returns the file info to persist, if it changed.
func (o *outFile) takeInfo() (fileInfo, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.infoDirty || !o.sizeKnown {
		return fileInfo{}, false
	}
	o.infoDirty = false
	return o.info, true
}

// syncData fdatasyncs the file when bytes were written since the last
// time.
func (o *outFile) syncData() error {
	o.mu.Lock()
	w := o.wrote
	o.wrote = false
	o.mu.Unlock()
	if !w || o.f == nil {
		return nil
	}
	if err := o.f.Sync(); err != nil {
		return fmt.Errorf("download: sync %s: %w", o.partPath, err)
	}
	return nil
}

// finish verifies a file whose segments are all done or failed, renames
// it into place or writes its .incomplete sidecar, and returns the result.
func (o *outFile) finish(overwrite bool, taken func(string) bool) *FileResult {
	r := &FileResult{Job: o.job.name, Segments: o.segments, Name: filepath.Base(o.partPath), Path: o.partPath}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sizeKnown {
		r.Size = o.info.Size
	}
	o.refineMissing()
	r.Missing = o.missing
	o.missing = nil // the result holds them now (a file is finished once)
	slices.SortFunc(r.Missing, func(a, b jobs.Missing) int { return a.Segment - b.Segment })
	for _, p := range o.parts {
		r.Parts = append(r.Parts, PartCRC{Offset: p.off, Size: p.size, CRC32: p.crc})
	}
	slices.SortFunc(r.Parts, func(a, b PartCRC) int { return cmp.Compare(a.Offset, b.Offset) })
	defer func() {
		if o.f != nil {
			o.f.Close()
			o.f = nil
		}
	}()
	fail := func(why string) *FileResult {
		r.Err = why
		if err := o.writeSidecar(r); err != nil {
			r.Err += "; " + err.Error()
		}
		return r
	}
	if len(r.Missing) > 0 {
		return fail(fmt.Sprintf("%d of %d segments missing on every server", len(r.Missing), r.Segments))
	}
	if !o.sizeKnown {
		return fail("no part told the file's size")
	}
	if err := o.verify(); err != nil {
		return fail(err.Error())
	}
	name := ""
	if o.info.Name != "" {
		name = SanitizeName(o.info.Name, "")
	}
	if name == "" || name == o.nzbName {
		name = o.reserved
	}
	name = uniqueName(name, taken)
	final := filepath.Join(o.dir, name)
	if _, err := os.Lstat(final); err == nil && !overwrite {
		return fail(fmt.Sprintf("%s exists; not overwritten (use -overwrite)", name))
	}
	if err := o.f.Sync(); err != nil {
		return fail(fmt.Sprintf("sync: %v", err))
	}
	if err := os.Rename(o.partPath, final); err != nil {
		return fail(fmt.Sprintf("rename: %v", err))
	}
	if err := spoolfs.SyncDir(o.dir); err != nil {
		return fail(err.Error())
	}
	os.Remove(sidecarPath(o.partPath))
	r.Name, r.Path, r.Complete = name, final, true
	return r
}

// verify checks a file with every segment done: its size on disk, the
// parts' coverage, and the whole-file CRC-32 when a part gave one.
func (o *outFile) verify() error {
	st, err := o.f.Stat()
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if st.Size() != o.info.Size {
		if st.Size() > o.info.Size {
			return fmt.Errorf("file has %d bytes, yEnc size=%d", st.Size(), o.info.Size)
		}
		// Only possible after a resume whose .part lost its tail: refetching
		// is the owner's business; say so.
		return fmt.Errorf("file has %d bytes, yEnc size=%d (truncated .part)", st.Size(), o.info.Size)
	}
	if o.prior.Len() == 0 {
		// Every part was verified in this run: they must tile the file,
		// and their CRCs combine into the file's (proto.CRC32Combine).
		ps := make([]partInfo, 0, len(o.parts))
		for _, p := range o.parts {
			ps = append(ps, p)
		}
		slices.SortFunc(ps, func(a, b partInfo) int {
			switch {
			case a.off < b.off:
				return -1
			case a.off > b.off:
				return 1
			}
			return 0
		})
		var at int64
		var crc uint32
		for _, p := range ps {
			if p.off != at {
				return fmt.Errorf("parts do not cover the file: gap or overlap at byte %d", at)
			}
			crc = proto.CRC32Combine(crc, p.crc, p.size)
			at += p.size
		}
		if at != o.info.Size {
			return fmt.Errorf("parts cover %d of %d bytes", at, o.info.Size)
		}
		if o.info.HasCRC32 && crc != o.info.CRC32 {
			return fmt.Errorf("file CRC-32 %08x, yEnc crc32=%08x", crc, o.info.CRC32)
		}
		return nil
	}
	if !o.info.HasCRC32 {
		return nil // each part's pcrc32 was checked when it arrived
	}
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, io.NewSectionReader(o.f, 0, o.info.Size)); err != nil {
		return fmt.Errorf("read for CRC: %w", err)
	}
	if h.Sum32() != o.info.CRC32 {
		return fmt.Errorf("file CRC-32 %08x, yEnc crc32=%08x", h.Sum32(), o.info.CRC32)
	}
	return nil
}

// sidecarPath is NAME.incomplete for NAME.part.
func sidecarPath(part string) string {
	return strings.TrimSuffix(part, ".part") + ".incomplete"
}

// writeSidecar writes NAME.incomplete: why the file is not complete and,
// line by line, the missing segments and their byte ranges.
func (o *outFile) writeSidecar(r *FileResult) error {
	return writeDurableFunc(sidecarPath(o.partPath), func(w io.Writer) error {
		fmt.Fprintf(w, "newsget: %s is incomplete: %s\n", filepath.Base(o.partPath), r.Err)
		if o.sizeKnown {
			fmt.Fprintf(w, "size %d\n", o.info.Size)
		}
		return writeMissing(w, r.Missing)
	})
}

// FormatMissing lists missing segments one per line: "missing segment 3
// bytes 6000-8999 (3000 bytes)", byte ranges inclusive; "bytes unknown"
// when no part told the layout.
func FormatMissing(ms []jobs.Missing) string {
	var b strings.Builder
	writeMissing(&b, ms)
	return b.String()
}

// writeMissing writes FormatMissing's lines to w.
func writeMissing(w io.Writer, ms []jobs.Missing) error {
	for _, m := range ms {
		var err error
		if m.End > m.Begin {
			_, err = fmt.Fprintf(w, "missing segment %d bytes %d-%d (%d bytes)\n", m.Segment, m.Begin, m.End-1, m.End-m.Begin)
		} else {
			_, err = fmt.Fprintf(w, "missing segment %d bytes unknown\n", m.Segment)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// infoPath is where a file's info is kept.
func infoPath(queueDir, job string, idx int) string {
	return filepath.Join(queueDir, "files", job, strconv.Itoa(idx)+".json")
}

// readInfo reads a file's info from an earlier run.
func readInfo(path string) (fileInfo, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return fileInfo{}, false
	}
	var fi fileInfo
	if json.Unmarshal(data, &fi) != nil {
		return fileInfo{}, false
	}
	return fi, true
}

// saveInfo writes a file's info durably.
func saveInfo(path string, fi fileInfo) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	data, err := json.Marshal(fi)
	if err != nil {
		return err
	}
	return writeDurable(path, data)
}

// noteMissing records a segment no server has. The job queue and the log
// get the first MaxMissingListed of the file one by one (the .incomplete
// sidecar lists them all): a million missing segments must neither make
// every compaction of the queue rewrite them all nor print a line each.
// Called with Engine.mu held.
func (e *Engine) noteMissing(o *outFile, ev download.SegmentFailed) {
	m := o.missingRange(ev.Segment.Number)
	o.missing = append(o.missing, m)
	level := slog.LevelDebug
	if len(o.missing) <= MaxMissingListed {
		o.pendingMiss = append(o.pendingMiss, m)
		level = slog.LevelWarn
	}
	e.log.Log(e.ctx, level, "segment missing", "file", o.nzbName, "segment", ev.Segment.Number, "verdicts", ev.String())
	if len(o.missing) == MaxMissingListed+1 {
		e.log.Warn("more segments missing: listed in the .incomplete file, not one by one here", "file", o.nzbName)
	}
}

// clearBad forgets a failed check of segment n: its next attempt starts
// clean.
func (o *outFile) clearBad(n int) {
	o.mu.Lock()
	delete(o.bad, n)
	delete(o.written, n)
	delete(o.unwritten, n)
	o.mu.Unlock()
}
