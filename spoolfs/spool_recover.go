package spoolfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/newsflow/newsflow/spoolfs/records"
)

// OpenSpool opens the spool in dir, creating it if needed, and recovers from
// whatever a crash left behind (recovery at open, spoolfs's package doc):
//
//  1. sweep the temp file of an interrupted history rewrite;
//  2. check every segment's header and seal; a segment with a bad header is
//     moved to quarantine/, whole;
//  3. replay the history log into memory; corrupt regions and a torn tail are
//     copied to quarantine/ and skipped or cut off;
//  4. scan the spool from the last checkpoint on, adding to the history
//     every record it lacks; a corrupt region is quarantined and skipped, a
//     torn tail is quarantined and cut off, an unsealed full segment is
//     sealed;
//  5. check the history against the segments: acknowledged articles whose
//     data was cut off or whose segment is gone are forgotten (logged once,
//     counted in LostAtOpen), so upstream may offer them again;
//  6. fsync what changed, write a checkpoint, fsync the log.
//
// Only one process may have a spool open: a second OpenSpool fails while
// the first holds dir/LOCK.
func OpenSpool(dir string, opts SpoolOptions) (*Spool, error) {
	opts = opts.withDefaults()
	s := &Spool{
		dir:    dir,
		segDir: filepath.Join(dir, spoolDirName),
		opts:   opts,
		log:    opts.Logger.With("spool", dir),
		segs:   make(map[uint32]*segment),
	}
	s.cwake = sync.NewCond(&s.cmu)
	s.hist = newHistory(s, opts.ReserveTimeout)
	for _, d := range []string{dir, s.segDir, filepath.Join(dir, quarantineDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("spool: open %s: %w", dir, err)
		}
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("spool: open %s: %w", dir, err)
	}
	s.lock = lock
	if err := s.recover(); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("spool: open %s: %w", dir, err)
	}
	return s, nil
}

func (s *Spool) recover() error {
	// Step 1: a history.tmp is an interrupted rewrite; the old log is intact.
	tmp := filepath.Join(s.dir, histTempName)
	if err := os.Remove(tmp); err == nil {
		s.log.Warn("removed interrupted history rewrite", "file", tmp)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// Step 2.
	if err := s.loadSegments(); err != nil {
		return err
	}
	// Step 3.
	if err := s.replayHistory(); err != nil {
		return err
	}
	// Step 4.
	changed, err := s.scanAfterCheckpoint()
	if err != nil {
		return err
	}
	if err := s.openActive(); err != nil {
		return err
	}
	s.dropLost()
	// Step 6: what the scan found may only be in the page cache (the process
	// died, the kernel did not): make it durable before the log says so.
	for _, seg := range changed {
		if err := syncData(seg.f); err != nil {
			return err
		}
		seg.synced = seg.written
	}
	if err := SyncDir(s.segDir); err != nil {
		return err
	}
	a := s.active
	if err := syncData(a.f); err != nil {
		return err
	}
	a.synced = a.written
	s.closeIdle()
	end := Position{Seg: a.num, Off: a.written}
	s.hwait = appendCheckpoint(s.hwait, end, a.newest)
	s.durEnd = end
	if err := s.writeHistoryLocked(); err != nil {
		if !noSpace(err) {
			return err
		}
		// The records stay in hwait for the first Sync that can write
		// them; until then the old checkpoint holds (a crash rescans
		// from it), and the spool takes no writes (writableLocked).
		s.log.Error("history: no space to write what the open found; written once space returns", "err", err)
		return nil
	}
	if err := syncData(s.hfile); err != nil {
		return err
	}
	s.ckpt, s.ckptNewest = end, a.newest
	s.ckptSeg.Store(end.Seg)
	return nil
}

// parseSegName returns the number of a segment file name "%08x.seg".
func parseSegName(name string) (uint32, bool) {
	hex, ok := strings.CutSuffix(name, ".seg")
	if !ok || len(hex) != 8 || strings.ToLower(hex) != hex {
		return 0, false
	}
	n, err := strconv.ParseUint(hex, 16, 32)
	return uint32(n), err == nil && n != 0
}

// loadSegments builds the segment table from the spool directory, reading
// each sealed segment's seal for its size and newest arrival.
func (s *Spool) loadSegments() error {
	ents, err := os.ReadDir(s.segDir)
	if err != nil {
		return err
	}
	var nums []uint32
	for _, e := range ents {
		if n, ok := parseSegName(e.Name()); ok && e.Type().IsRegular() {
			nums = append(nums, n)
		} else {
			s.log.Warn("ignoring unexpected file in spool directory", "name", e.Name())
		}
	}
	slices.Sort(nums)
	for i, num := range nums {
		path := s.segPath(num)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		size := st.Size()
		var hb [segHeaderSize]byte
		_, rerr := f.ReadAt(hb[:], 0)
		got, ok := parseSegHeader(hb[:])
		if rerr != nil || !ok || got != num {
			f.Close()
			if i == len(nums)-1 && size <= segHeaderSize {
				// A crash between creating the last segment and writing its
				// header: nothing was ever stored in it.
				s.log.Warn("removing segment with no header", "segment", path, "size", size)
				if err := os.Remove(path); err != nil {
					return err
				}
				continue
			}
			if err := s.quarantineFile(path, "bad segment header"); err != nil {
				return err
			}
			continue
		}
		seg := &segment{num: num, path: path, written: size}
		if size >= segHeaderSize+recOverhead {
			tail := make([]byte, recOverhead)
			if _, err := f.ReadAt(tail, size-recOverhead); err == nil {
				if n, _, ok := parseRecord(tail); ok && n == recOverhead && tail[4] == kindSeal {
					h, _ := parseRecordHeader(tail)
					seg.sealed, seg.newest = true, h.arrived
				}
			}
		}
		f.Close() // scanAfterCheckpoint reopens the few it scans
		s.addSegmentLocked(seg)
		s.bytes.Add(size)
	}
	return nil
}

// replayHistory loads the history log into the table and finds the last
// checkpoint. A missing log is created; one with a bad header is moved to
// quarantine/ and recreated, so the whole spool gets scanned.
func (s *Spool) replayHistory() error {
	path := filepath.Join(s.dir, histFileName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err == nil {
		var hb [histHeaderSize]byte
		if _, err := f.ReadAt(hb[:], 0); err != nil || hb != histMagic {
			f.Close()
			f = nil
			if err := s.quarantineFile(path, "bad history header"); err != nil {
				return err
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	} else {
		f = nil
	}
	if f == nil {
		if err := WriteFileDurable(path, histMagic[:], 0o644); err != nil {
			return err
		}
		if f, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
			return err
		}
	}
	s.hfile = f
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h := s.hist
	// Size the index for the log up front (records are about 70 bytes)
	// rather than growing it step by step while replaying. The articles
	// the scan after the checkpoint may find lost are noted for dropLost.
	s.suspects = nil
	last, pruneAt := int64(-1), 4096
	end, err := h.replayLocked(f, st.Size(), indexSize(int(st.Size()/64)), func(off int64, r histRecord) {
		if off <= last { // the replay started over with a bigger index
			s.suspects, s.ckpt, s.ckptNewest = s.suspects[:0], Position{}, 0
		}
		last = off
		switch r.kind {
		case kindCkpt:
			s.ckpt = Position{Seg: r.tok.Seg, Off: int64(r.tok.Off)}
			s.ckptNewest = r.when
			if len(s.suspects) > pruneAt {
				s.suspects = slices.DeleteFunc(s.suspects, func(c suspect) bool { return !s.mayBeLost(c.tok, s.ckpt) })
				pruneAt = max(4096, 2*len(s.suspects))
			}
		case kindArticle:
			if s.mayBeLost(r.tok, s.ckpt) {
				s.suspects = append(s.suspects, suspect{string(r.msgid), r.tok})
			}
		}
	}, func(off, n int64) {
		s.quarantineRange(f, path, off, n, "corrupt history region")
	})
	if err != nil {
		return fmt.Errorf("history: replay %s: %w", path, err)
	}
	if end < st.Size() {
		if err := s.cutTail(f, path, end, st.Size()); err != nil {
			return err
		}
	}
	s.hoff = end
	return nil
}

// scanAfterCheckpoint scans every segment at or after the checkpoint, and
// any older one whose seal is missing, adding what the history lacks. It
// returns the segments it changed or that may hold data not yet fsynced.
func (s *Spool) scanAfterCheckpoint() ([]*segment, error) {
	var changed []*segment
	h := s.hist
	for i, seg := range s.order {
		last := i == len(s.order)-1
		start := int64(segHeaderSize)
		switch {
		case seg.num < s.ckpt.Seg && seg.sealed:
			continue // sealed, fsynced and in the log before the checkpoint
		case seg.num == s.ckpt.Seg && s.ckpt.Off <= seg.written:
			start = s.ckpt.Off
			seg.newest = max(seg.newest, s.ckptNewest)
		case seg.num == s.ckpt.Seg:
			s.log.Error("spool segment shorter than its checkpoint; rescanning it", "segment", seg.path, "size", seg.written, "checkpoint", s.ckpt.Off)
		}
		f, err := os.OpenFile(seg.path, os.O_RDWR, 0)
		if err != nil {
			return nil, err
		}
		seg.f = f
		s.nopen++
		sc := records.NewScanner(f, seg.written, recMagic, parseRecord)
		sealed := false // the last record read is a seal
		end, err := sc.Scan(start, func(off int64, b []byte) error {
			r := viewRecord(off, b)
			seg.newest = max(seg.newest, r.hdr.arrived)
			sealed = r.hdr.kind == kindSeal
			switch r.hdr.kind {
			case kindArticle:
				tok := Token{Seg: seg.num, Off: uint64(off) + recHeaderSize, Len: r.hdr.n}
				if h.addLocked(string(r.msgid), kindArticle, tok, r.hdr.arrived, 0) {
					s.hwait = appendHistRecord(s.hwait, kindArticle, string(r.msgid), tok, r.hdr.arrived)
				}
			case kindReject:
				if h.addLocked(string(r.msgid), kindReject, Token{}, r.hdr.arrived, 0) {
					s.hwait = appendHistRecord(s.hwait, kindReject, string(r.msgid), Token{}, r.hdr.arrived)
				}
			}
			return nil
		}, func(off, n int64) {
			s.quarantineRange(seg.f, seg.path, off, n, "corrupt spool region")
		})
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", seg.path, err)
		}
		if end < seg.written {
			if err := s.cutTail(seg.f, seg.path, end, seg.written); err != nil {
				return nil, err
			}
			if s.cutAt == nil {
				s.cutAt = map[uint32]int64{}
			}
			s.cutAt[seg.num] = end
			s.bytes.Add(end - seg.written)
			seg.written = end
			// sealed stays what the last record says: a seal followed by
			// zeros is a crash between sealing and the fsync that made
			// the cut of the zeros written ahead durable (rotateLocked),
			// and the segment is sealed: no second seal, no appends.
		}
		seg.sealed = sealed || seg.sealed && end == seg.written
		if !last && !seg.sealed && s.cutsPending.Load() && s.cutPendingFor(seg.path) {
			// Its torn tail is still on disk: no seal over it. Sealed in
			// memory only (it takes no appends); the next open seals it.
			seg.sealed = true
		}
		if !last && !seg.sealed {
			// A full segment whose seal never reached the disk.
			seal := appendRecord(nil, kindSeal, "", nil, seg.newest, 0)
			if _, err := seg.f.WriteAt(seal, seg.written); err != nil {
				return nil, fmt.Errorf("seal %s: %w", seg.path, err)
			}
			seg.written += int64(len(seal))
			s.bytes.Add(int64(len(seal)))
			seg.sealed = true
			s.log.Warn("sealed segment left unsealed by a crash", "segment", seg.path)
		}
		changed = append(changed, seg)
	}
	return changed, nil
}

// openActive makes the last segment the active one, starting a new segment
// if there is none or the last is sealed.
func (s *Spool) openActive() error {
	var last *segment
	if n := len(s.order); n > 0 {
		last = s.order[n-1]
	}
	if last != nil && !last.sealed {
		last.refs = 1
		s.active = last
		s.activeNum.Store(last.num)
		return nil
	}
	// Never reuse a segment number that a token may still name: not even
	// when the segments after the checkpoint were lost or deleted.
	num := s.ckpt.Seg + 1
	if last != nil && last.num >= num {
		num = last.num + 1
	}
	seg, err := s.createSegment(num)
	if err != nil {
		return err
	}
	s.addSegmentLocked(seg)
	seg.refs = 1
	s.active = seg
	s.activeNum.Store(num)
	return nil
}

// closeIdle closes the descriptors recovery opened, except the active
// segment's; reads reopen them on demand.
func (s *Spool) closeIdle() {
	for _, seg := range s.order {
		if seg != s.active && seg.f != nil {
			seg.f.Close()
			seg.f = nil
			s.nopen--
		}
	}
	if s.nopen < 0 {
		s.nopen = 0
	}
}

// cutTail removes the torn tail [end, size) of a file, after copying it to
// quarantine/ unless it is all zeros (unwritten blocks, or the zeros a
// spool segment keeps written ahead of its records: preWriteLocked). The
// copy ends at the first whole 4 KiB of zeros after the last byte that is
// not zero: a torn record followed by megabytes of zeros written ahead
// keeps every byte of the record and its offset, not the zeros. If the copy fails
// the tail stays: evidence is never destroyed. For lack of space (a kill -9
// while the disk was full) the cut is put off (pendingCut) and open goes
// on: the spool serves reads but takes no writes until finishCuts succeeds
// once space returns. Any other failure fails open.
func (s *Spool) cutTail(f *os.File, path string, end, size int64) error {
	tail := make([]byte, size-end)
	if _, err := f.ReadAt(tail, end); err != nil && err != io.EOF {
		return fmt.Errorf("read torn tail of %s: %w", path, err)
	}
	if ev := tailEvidence(tail); len(ev) > 0 {
		q := s.quarantineName(path, end)
		if err := WriteFileDurable(q, ev, 0o644); err != nil {
			if !noSpace(err) {
				return fmt.Errorf("quarantine torn tail of %s: %w", path, err)
			}
			os.Remove(q)
			s.cutMu.Lock()
			s.putOff = append(s.putOff, pendingCut{path: path, end: end, size: size})
			s.cutMu.Unlock()
			s.cutsPending.Store(true)
			s.log.Error("torn tail kept in place: no space to copy it to quarantine; the spool takes no writes until space returns",
				"file", path, "offset", end, "bytes", len(tail), "err", err)
			return nil
		}
		s.log.Warn("torn tail cut off after a crash", "file", path, "offset", end, "bytes", len(tail), "copy", q)
	} else {
		s.log.Info("zero tail cut off (zeros written ahead, or blocks a crash left unwritten)", "file", path, "offset", end, "bytes", len(tail))
	}
	if err := f.Truncate(end); err != nil {
		return fmt.Errorf("cut torn tail of %s: %w", path, err)
	}
	return syncData(f)
}

// tailEvidence is what of a torn tail goes to quarantine/: up to the first
// whole 4 KiB of zeros after its last byte that is not zero; nothing if it
// is all zeros.
func tailEvidence(tail []byte) []byte {
	n := len(tail)
	for n > 0 && tail[n-1] == 0 {
		n--
	}
	if n == 0 {
		return nil
	}
	return tail[:min(len(tail), (n+4095)/4096*4096)]
}

// quarantineRange copies the corrupt region [off, off+n) of a file to
// quarantine/ and logs it. The region stays in place (records after it are
// still addressed by their offsets); a failure to copy is logged.
func (s *Spool) quarantineRange(f *os.File, path string, off, n int64, why string) {
	b := make([]byte, n)
	q := s.quarantineName(path, off)
	if _, err := f.ReadAt(b, off); err != nil {
		s.log.Error(why+"; could not copy it", "file", path, "offset", off, "bytes", n, "err", err)
		return
	}
	if err := WriteFileDurable(q, b, 0o644); err != nil {
		s.log.Error(why+"; could not copy it", "file", path, "offset", off, "bytes", n, "err", err)
		return
	}
	s.log.Error(why+" skipped", "file", path, "offset", off, "bytes", n, "copy", q)
}

// quarantineName names the copy of the bytes at off of path.
func (s *Spool) quarantineName(path string, off int64) string {
	return filepath.Join(s.dir, quarantineDir, fmt.Sprintf("%s.%016x.bad", filepath.Base(path), off))
}

// quarantineFile moves a whole file to quarantine/.
func (s *Spool) quarantineFile(path, why string) error {
	q := filepath.Join(s.dir, quarantineDir, fmt.Sprintf("%s.%d", filepath.Base(path), time.Now().UnixNano()))
	if err := os.Rename(path, q); err != nil {
		return fmt.Errorf("quarantine %s: %w", path, err)
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return err
	}
	if err := SyncDir(filepath.Dir(q)); err != nil {
		return err
	}
	s.log.Error(why+"; file moved to quarantine", "file", path, "copy", q)
	return nil
}
