package newsweb

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Logouts: a session cookie is signed, not looked up, so deleting it
// from the browser does not end it; a copy of it would stay good until it
// expires. Logging out therefore records the session as ended, and
// sessionUser refuses an ended session on every request. A record is kept
// until the session's own expiry, so the record holds only the sessions
// logged out and not yet expired.
//
// The record is kept across restarts in PostingOptions.LogoutsFile, one
// line a session:
//
//	sha256 of the cookie value (hex) TAB expiry (unix seconds) TAB crc32 LF
//
// where crc32 (IEEE, 8 hex digits) covers the bytes before its TAB; the
// file never holds the cookie itself. A logout writes the whole record
// (temporary file, fsync, rename, fsync of the directory) before it is
// answered, so that a logout the reader saw is never lost.
//
// A damaged line could be a session that must stay ended, so it is not
// skipped: loading ends every session issued before then instead (the
// cookie carries its issue time, posting.go), which covers every session
// the file could name, and newsweb goes on serving; readers log in again.
// That cutoff is a line of its own,
//
//	ended-before TAB issue time (unix nanoseconds) TAB crc32 LF
//
// and the file is written again at once, from the lines read before the
// damage and the cutoff, so that the cutoff survives the next restart and
// that restart finds no damage. The cutoff is kept for good: sessions
// issued before it may have had any lifetime.

// maxLogoutLine is the longest line of the logouts file.
const maxLogoutLine = 128

// cutoffKey is the key of the cutoff line.
const cutoffKey = "ended-before"

// logouts is the record of ended sessions.
type logouts struct {
	path string // "" keeps the record in memory only
	mu   sync.Mutex
	// ended maps the hash of a cookie value to its expiry (unix seconds).
	ended map[string]int64
	// cutoff ends the sessions issued before it (unix nanoseconds; 0
	// ends none).
	cutoff int64
	// damage says what loading found damaged and did about it; "" when
	// the file was whole.
	damage string
	// damagedLine is the first damaged line of the file.
	damagedLine int
}

// sessionKey is what the record keeps of a cookie value.
func sessionKey(value string) string {
	h := sha256.Sum256([]byte(value))
	return hex.EncodeToString(h[:])
}

// has reports whether the session with cookie value, issued at issued
// (unix nanoseconds), was logged out or was issued before the cutoff.
func (l *logouts) has(value string, issued int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if issued < l.cutoff {
		return true
	}
	_, ok := l.ended[sessionKey(value)]
	return ok
}

// end records the session with cookie value, valid until exp, as logged
// out, drops the records of sessions expired by now, and writes the
// record to its file. The session is ended in memory even when the write
// fails.
func (l *logouts) end(value string, exp, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended[sessionKey(value)] = exp.Unix()
	for k, e := range l.ended {
		if e < now.Unix() {
			delete(l.ended, k)
		}
	}
	return l.save()
}

// save writes the record to its file; l.mu is held, or l is not shared
// yet.
func (l *logouts) save() error {
	if l.path == "" {
		return nil
	}
	var b []byte
	if l.cutoff != 0 {
		b = appendLogoutLine(b, cutoffKey, l.cutoff)
	}
	for k, e := range l.ended {
		b = appendLogoutLine(b, k, e)
	}
	if err := writeAtomic(l.path, b); err != nil {
		return fmt.Errorf("newsweb: logouts: %w", err)
	}
	return nil
}

// appendLogoutLine appends the line of the session with key until exp.
func appendLogoutLine(dst []byte, key string, exp int64) []byte {
	start := len(dst)
	dst = append(dst, key...)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, exp, 10)
	return fmt.Appendf(dst, "\t%08x\n", crc32.ChecksumIEEE(dst[start:]))
}

// parseLogoutLine reads one line (without its LF); ok is false for a
// damaged one. The cutoff line has key cutoffKey.
func parseLogoutLine(line []byte) (key string, exp int64, ok bool) {
	i := bytes.LastIndexByte(line, '\t')
	if i < 0 || len(line)-i-1 != 8 {
		return "", 0, false
	}
	// The checksum is read as it is written, lower-case hex, so that a
	// line that parses is written back the same.
	if string(line[i+1:]) != fmt.Sprintf("%08x", crc32.ChecksumIEEE(line[:i])) {
		return "", 0, false
	}
	k, e, found := strings.Cut(string(line[:i]), "\t")
	if !found {
		return "", 0, false
	}
	if k != cutoffKey {
		if len(k) != 2*sha256.Size {
			return "", 0, false
		}
		if h, err := hex.DecodeString(k); err != nil || hex.EncodeToString(h) != k {
			return "", 0, false
		}
	}
	exp, err := strconv.ParseInt(e, 10, 64)
	if err != nil || strconv.FormatInt(exp, 10) != e {
		return "", 0, false
	}
	return k, exp, true
}

// CheckLogoutsFile reads a logouts file as NewPosting does, without
// changing it, and reports why it cannot be read. A damaged file is not
// an error: NewPosting ends the sessions it could name and rewrites it.
func CheckLogoutsFile(path string) error {
	_, _, err := readLogouts(path, time.Now())
	return err
}

// loadLogouts reads the record at path (empty when path is "" or the
// file is missing), leaving out the sessions expired by now. When a line
// is damaged it ends every session issued before now, rewrites the file
// from the lines before the damage and that cutoff, and says so in
// l.damage; err is only for a file that cannot be read.
func loadLogouts(path string, now time.Time) (*logouts, error) {
	l, n, err := readLogouts(path, now)
	if err != nil || n == 0 {
		return l, err
	}
	l.cutoff = max(l.cutoff, now.UnixNano())
	l.damagedLine = n
	l.damage = "damaged; it may name a logged-out session, so every session issued before this start is ended (readers log in again)"
	if err := l.save(); err != nil {
		l.damage += "; rewriting the file failed, so the next start ends the sessions again: " + err.Error()
	} else {
		l.damage += "; the file is rewritten without the damage"
	}
	return l, nil
}

// readLogouts reads the record at path as loadLogouts does, without
// changing the file; damaged is the number of the first damaged line (0
// when none), and the record holds the lines before it.
func readLogouts(path string, now time.Time) (l *logouts, damaged int, err error) {
	l = &logouts{path: path, ended: map[string]int64{}}
	if path == "" {
		return l, 0, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return l, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("newsweb: logouts file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, maxLogoutLine), maxLogoutLine)
	n := 0
	for sc.Scan() {
		n++
		key, exp, ok := parseLogoutLine(sc.Bytes())
		switch {
		case !ok:
			return l, n, nil
		case key == cutoffKey:
			l.cutoff = max(l.cutoff, exp)
		case exp >= now.Unix():
			l.ended[key] = exp
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return l, n + 1, nil
		}
		return nil, 0, fmt.Errorf("newsweb: logouts file %s: %w", path, err)
	}
	return l, 0, nil
}
