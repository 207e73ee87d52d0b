package spoolfs

// Damage the spool outlives: acknowledged articles found lost at
// open (dropLost) or damaged when read (Holds, Verify, Forget), and torn
// tails that open could not quarantine for lack of space (pendingCut,
// finishCuts, Writable).

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"syscall"
)

// dropLost checks the history against the segments after the scan: an
// article whose record lay in a tail the scan cut off, or in a segment that
// is gone while older ones remain (not expired: expiry removes the oldest),
// was acknowledged once and is lost. History would go on refusing it (438),
// so upstream would never offer it again: it is forgotten, with a forget
// record in the log, and one line says how many. The candidates are those
// the replay of the log noted (openSuspects); what the scan found after
// the checkpoint lies before any cut.
func (s *Spool) dropLost() {
	suspects := s.suspects
	s.suspects = nil
	if len(s.order) == 0 {
		return
	}
	h := s.hist
	var lost []string
	for _, c := range suspects {
		if e, ok := h.getLocked(c.id); ok && e.kind == kindArticle && e.tok == c.tok && s.lostToken(c.tok) {
			lost = append(lost, c.id)
		}
	}
	s.cutAt = nil
	if len(lost) == 0 {
		return
	}
	for _, id := range lost {
		h.forgetLocked(id)
		s.hwait = appendHistRecord(s.hwait, kindForget, id, Token{}, 0)
	}
	s.lostAtOpen = len(lost)
	s.log.Error("spool: acknowledged articles lost (their spool data was cut off or is gone); forgotten by the history so that upstream can offer them again",
		"articles", len(lost))
}

// suspect is an article the replay of the log found that the scan after
// the checkpoint may find lost (see dropLost).
type suspect struct {
	id  string
	tok Token
}

// mayBeLost reports whether the article at tok may turn out lost once the
// spool after checkpoint ckpt is scanned: its segment is gone or too
// short already, or is one the scan reads (at or after the checkpoint's,
// or not sealed), which may cut its tail.
func (s *Spool) mayBeLost(tok Token, ckpt Position) bool {
	seg, ok := s.segs[tok.Seg]
	if !ok { // gone: expired if older than every segment there is
		return len(s.order) > 0 && tok.Seg > s.order[0].num
	}
	return tok.Seg >= ckpt.Seg || !seg.sealed || int64(tok.Off)+int64(tok.Len) > seg.written
}

// lostToken reports whether the article at tok is lost, after the scan:
// in a tail the scan cut off, beyond its segment's end, or in a segment
// that is gone while older ones remain.
func (s *Spool) lostToken(tok Token) bool {
	recOff := int64(tok.Off) - recHeaderSize
	if seg, ok := s.segs[tok.Seg]; ok {
		cut, wasCut := s.cutAt[tok.Seg]
		return wasCut && recOff >= cut || int64(tok.Off)+int64(tok.Len) > seg.written
	}
	return tok.Seg > s.order[0].num
}

// LostAtOpen is how many acknowledged articles the open found lost and
// dropped from the history (see OpenSpool).
func (s *Spool) LostAtOpen() int { return s.lostAtOpen }

// Holds reports whether the segment tok names is still there and long
// enough for the article, from the segment table alone (no I/O): a token
// into a segment cut short or gone is not. It does not check the record or
// its CRC (AppendArticle and Verify do).
func (s *Spool) Holds(tok Token) bool {
	if tok.Seg == 0 || tok.Off < segHeaderSize+recHeaderSize || tok.Len == 0 {
		return false
	}
	if tok.Seg == s.activeNum.Load() {
		// Being written: in the file or still in the append buffer.
		s.mu.Lock()
		a := s.active
		if a.num == tok.Seg {
			ok := int64(tok.Off)+int64(tok.Len) <= a.written+int64(len(s.buf))
			s.mu.Unlock()
			return ok
		}
		s.mu.Unlock() // the segment was sealed meanwhile
	}
	s.rmu.Lock()
	seg, ok := s.segs[tok.Seg]
	s.rmu.Unlock()
	return ok && seg.sealed && int64(tok.Off)+int64(tok.Len) <= seg.written
}

// Matches reports whether the record at tok is msgid's article: its header
// intact, an article of tok.Len octets, and the CRC of its message-id that
// of msgid. It reads the header only (one pread). A token whose article
// was lost and whose offsets now hold another article does not match.
func (s *Spool) Matches(tok Token, msgid string) bool {
	sec, h, err := s.section(tok)
	if err != nil {
		return false
	}
	sec.Close()
	return h.idLen == len(msgid) && h.crcM == crc32c([]byte(msgid))
}

// Verify reads the article at tok and checks its record and CRC, as Get
// does, without keeping it; scratch is a buffer to reuse, returned grown.
// Callers that send an article by sendfile, which never looks at it, verify
// it first so that no damaged byte leaves.
//
// It reads the article in chunks of at most verifyChunk octets into
// scratch and checks the CRC chunk by chunk, so the bytes are copied out
// of the page cache once into a buffer that stays in the CPU's cache: no
// zeroing of an article-sized buffer and no second pass over it (Get's
// path cost newsfeed about half of its CPU time on 500 KB articles).
//
// The cost is reading the bytes from memory: for a 500 KB article in the
// page cache but not in the CPU's caches, pread and CRC took 79 us in
// 128 KiB chunks (16 KiB: 89, 32 KiB: 86, 64 KiB: 82, 512 KiB: 86), of
// which the pread alone 66 and the CRC of the cached chunks 21 (2-core
// Xeon, 2026-11). A read-only mapping of the whole segment kept across
// articles (page tables dropped after each with MADV_DONTNEED) took 55-60
// us alone, but in newsbench it used no less CPU per article and raised
// newsfeed's peak RSS from 24 to 73 MB, so Verify keeps pread. (Kernel
// CRC over the page cache through AF_ALG is not available here.)
func (s *Spool) Verify(tok Token, scratch []byte) ([]byte, error) {
	sec, h, err := s.section(tok)
	if err != nil {
		return scratch[:0], err
	}
	defer sec.Close()
	if cap(scratch) < verifyChunk {
		scratch = make([]byte, verifyChunk)
	}
	buf := scratch[:verifyChunk]
	crc := uint32(0)
	for off, end := sec.Offset, sec.Offset+sec.Length; off < end; {
		b := buf[:min(int64(len(buf)), end-off)]
		n, err := sec.File.ReadAt(b, off)
		if n < len(b) {
			if err == nil || err == io.EOF {
				err = ErrNotFound
			}
			return scratch[:0], fmt.Errorf("spool: get %s: %w", tok, err)
		}
		crc = crc32.Update(crc, castagnoli, b)
		off += int64(n)
	}
	if crc != h.crcP {
		s.log.Error("corrupt article", "segment", sec.seg.path, "token", tok.String())
		return scratch[:0], fmt.Errorf("spool: get %s: %w: CRC mismatch", tok, ErrCorrupt)
	}
	return scratch[:0], nil
}

// verifyChunk is how much of an article Verify reads at a time.
const verifyChunk = 128 << 10

// Forget drops msgid from the history, durably after the next Sync: its
// article was found damaged or gone, and upstream may offer it again.
func (s *Spool) Forget(msgid string) error {
	if err := checkMsgID(msgid); err != nil {
		return fmt.Errorf("spool: forget: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hist
	h.mu.Lock()
	removed := h.forgetLocked(msgid)
	h.mu.Unlock()
	if removed {
		s.hpend = appendHistRecord(s.hpend, kindForget, msgid, Token{}, 0)
	}
	return nil
}

// pendingCut is a torn tail cutTail could not quarantine for lack of
// space.
type pendingCut struct {
	path      string
	end, size int64
}

// cutPendingFor reports whether path has a cut put off.
func (s *Spool) cutPendingFor(path string) bool {
	s.cutMu.Lock()
	defer s.cutMu.Unlock()
	for _, c := range s.putOff {
		if c.path == path {
			return true
		}
	}
	return false
}

// noSpace reports whether err is the disk (or quota) being full.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// finishCuts carries out the cuts open put off, in order; it returns an
// error (wrapping ENOSPC while space is short) while any remains.
func (s *Spool) finishCuts() error {
	if !s.cutsPending.Load() {
		return nil
	}
	s.cutMu.Lock()
	defer s.cutMu.Unlock()
	for len(s.putOff) > 0 {
		c := s.putOff[0]
		f, err := os.OpenFile(c.path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("spool: cut torn tail of %s: %w", c.path, err)
		}
		tail := make([]byte, c.size-c.end)
		if _, err := f.ReadAt(tail, c.end); err != nil && err != io.EOF {
			f.Close()
			return fmt.Errorf("spool: read torn tail of %s: %w", c.path, err)
		}
		q := s.quarantineName(c.path, c.end)
		if err := WriteFileDurable(q, tailEvidence(tail), 0o644); err != nil {
			os.Remove(q)
			f.Close()
			return fmt.Errorf("spool: quarantine torn tail of %s: %w", c.path, err)
		}
		err = f.Truncate(c.end)
		if err == nil {
			err = syncData(f)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("spool: cut torn tail of %s: %w", c.path, err)
		}
		s.log.Warn("torn tail cut off now that there is space", "file", c.path, "offset", c.end, "bytes", len(tail), "copy", q)
		s.putOff = s.putOff[1:]
	}
	s.cutsPending.Store(false)
	return nil
}

// Writable reports why the spool cannot take writes now, if so: a cut put
// off for lack of space that still cannot be made, or a fatal error. It
// retries the cut first, so it is the probe to call until space returns.
func (s *Spool) Writable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writableLocked()
}
