package newsweb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/spoolfs"
)

// The visits file: what logged-in readers have seen (visits.go), kept
// across restarts in Options.VisitsFile.
//
// One line a thread, the readers least recently active first and each
// reader's threads least recently seen first, so that loading the lines
// in order rebuilds both orders:
//
//	user TAB root message-id TAB unix seconds TAB nanoseconds TAB crc32 LF
//
// where crc32 (IEEE, 8 hex digits) covers the bytes before its TAB. A
// user name or id holding a TAB, CR or LF is not written (the reader's
// record of it lives until the restart). Loading applies the bounds
// (maxVisitReaders, maxVisitThreads), so the file is at most about
// maxVisitReaders × maxVisitThreads lines.
//
// The record is written when it changed, every visitsSaveEvery and when
// the server closes: a crash loses at most the visits of the last
// visitsSaveEvery. A write goes to a temporary file beside the visits
// file, is fsynced, renamed over it, and the directory fsynced, so the
// file is the old one or the new one, whole. A damaged line (a bad
// checksum, a cut last line) is skipped and reported with the file's
// name; the rest is loaded.

const (
	// visitsSaveEvery is how often a changed record is written.
	visitsSaveEvery = time.Minute
	// maxVisitLine is the longest line read back; longer ones are damage.
	maxVisitLine = 2048
)

// appendVisitLine appends the line of user's visit of root up to seen.
func appendVisitLine(dst []byte, user, root string, seen time.Time) []byte {
	start := len(dst)
	dst = append(dst, user...)
	dst = append(dst, '\t')
	dst = append(dst, root...)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, seen.Unix(), 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(seen.Nanosecond()), 10)
	return fmt.Appendf(dst, "\t%08x\n", crc32.ChecksumIEEE(dst[start:]))
}

// parseVisitLine reads one line (with its LF); ok is false for a damaged
// one.
func parseVisitLine(line []byte) (user, root string, seen time.Time, ok bool) {
	line, found := bytes.CutSuffix(line, []byte("\n"))
	i := bytes.LastIndexByte(line, '\t')
	if !found || i < 0 || len(line)-i-1 != 8 {
		return "", "", time.Time{}, false
	}
	sum, err := strconv.ParseUint(string(line[i+1:]), 16, 32)
	if err != nil || uint32(sum) != crc32.ChecksumIEEE(line[:i]) {
		return "", "", time.Time{}, false
	}
	f := strings.Split(string(line[:i]), "\t")
	if len(f) != 4 || f[0] == "" || f[1] == "" || strings.ContainsAny(f[0]+f[1], "\r\n") {
		return "", "", time.Time{}, false
	}
	sec, err1 := strconv.ParseInt(f[2], 10, 64)
	nsec, err2 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil || nsec < 0 || nsec >= 1e9 {
		return "", "", time.Time{}, false
	}
	return f[0], f[1], time.Unix(sec, nsec).UTC(), true
}

// storable reports whether s can be a field of a line.
func storable(s string) bool { return s != "" && !strings.ContainsAny(s, "\t\r\n") }

// marshal returns the record as the file's lines, and the change count it
// holds.
func (v *visits) marshal() ([]byte, uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var b []byte
	for e := v.order.Back(); e != nil; e = e.Prev() {
		rv := e.Value.(*readerVisits)
		if !storable(rv.user) {
			continue
		}
		for t := rv.order.Back(); t != nil; t = t.Prev() {
			tv := t.Value.(*threadVisit)
			if storable(tv.root) {
				b = appendVisitLine(b, rv.user, tv.root, tv.seen)
			}
		}
	}
	return b, v.changes
}

// load reads the visits file at path into v (empty when the file is
// missing). It returns what it found damaged, one sentence naming the
// file, "" when nothing was; err is for a file that cannot be read at all.
func (v *visits) load(path string) (damage string, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("newsweb: visits: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, maxVisitLine+1)
	var bad []int
	for n := 1; ; n++ {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			bad = append(bad, n)
			for err == bufio.ErrBufferFull { // the rest of the long line
				_, err = r.ReadSlice('\n')
			}
			if err == io.EOF {
				break
			}
			continue
		}
		if err != nil && err != io.EOF {
			return "", fmt.Errorf("newsweb: visits: %s: %w", path, err)
		}
		if len(line) == 0 {
			break
		}
		user, root, seen, ok := parseVisitLine(line)
		if !ok {
			bad = append(bad, n)
		} else {
			v.see(user, []string{root}, []time.Time{seen})
		}
		if err == io.EOF {
			break
		}
	}
	v.mu.Lock()
	v.saved = v.changes
	v.mu.Unlock()
	if len(bad) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%s: %d damaged line(s) skipped (first: line %d); the other visits are loaded", path, len(bad), bad[0]), nil
}

// save writes the record to path when it changed since it was last read
// or written.
func (v *visits) save(path string) error {
	v.mu.Lock()
	same := v.changes == v.saved
	v.mu.Unlock()
	if same {
		return nil
	}
	b, changes := v.marshal()
	if err := writeAtomic(path, b); err != nil {
		return fmt.Errorf("newsweb: visits: %w", err)
	}
	v.mu.Lock()
	v.saved = max(v.saved, changes)
	v.mu.Unlock()
	return nil
}

// writeAtomic replaces the file at path with b, readable by its owner
// only (spoolfs.WriteFileDurable), creating its directory if need be.
func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := spoolfs.WriteFileDurable(path, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// keepVisits loads the visits file and writes the record back every
// visitsSaveEvery until Close.
func (s *Server) keepVisits(path string) {
	damage, err := s.visits.load(path)
	switch {
	case err != nil:
		s.log.Error("visits not loaded: readers' marks start empty", "file", path, "err", err)
	case damage != "":
		s.log.Warn("visits file damaged", "file", path, "what", damage)
	}
	s.visitsDone = make(chan struct{})
	s.visitsStopped = make(chan struct{})
	go func() {
		defer close(s.visitsStopped)
		t := time.NewTicker(visitsSaveEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if err := s.visits.save(path); err != nil {
					s.log.Error("saving visits", "file", path, "err", err)
				}
			case <-s.visitsDone:
				return
			}
		}
	}()
}

// Close writes the readers' visits one last time (when kept in a file)
// and stops writing them.
func (s *Server) Close() error {
	if s.visitsDone == nil {
		return nil
	}
	s.closeOnce.Do(func() { close(s.visitsDone) })
	<-s.visitsStopped
	if err := s.visits.save(s.opts.VisitsFile); err != nil {
		s.log.Error("saving visits", "file", s.opts.VisitsFile, "err", err)
		return err
	}
	return nil
}
