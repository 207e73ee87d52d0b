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
// answered, so that a logout the reader saw is never lost. A damaged line
// is not skipped: it could be a session that must stay ended, so loading
// the file fails with its name and line.

// maxLogoutLine is the longest line of the logouts file.
const maxLogoutLine = 128

// logouts is the record of ended sessions.
type logouts struct {
	path string // "" keeps the record in memory only
	mu   sync.Mutex
	// ended maps the hash of a cookie value to its expiry (unix seconds).
	ended map[string]int64
}

// sessionKey is what the record keeps of a cookie value.
func sessionKey(value string) string {
	h := sha256.Sum256([]byte(value))
	return hex.EncodeToString(h[:])
}

// has reports whether the session with cookie value was logged out.
func (l *logouts) has(value string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
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
	if l.path == "" {
		return nil
	}
	var b []byte
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
// damaged one.
func parseLogoutLine(line []byte) (key string, exp int64, ok bool) {
	i := bytes.LastIndexByte(line, '\t')
	if i < 0 || len(line)-i-1 != 8 {
		return "", 0, false
	}
	sum, err := strconv.ParseUint(string(line[i+1:]), 16, 32)
	if err != nil || uint32(sum) != crc32.ChecksumIEEE(line[:i]) {
		return "", 0, false
	}
	k, e, found := strings.Cut(string(line[:i]), "\t")
	if !found || len(k) != 2*sha256.Size {
		return "", 0, false
	}
	if h, err := hex.DecodeString(k); err != nil || hex.EncodeToString(h) != k {
		return "", 0, false
	}
	exp, err = strconv.ParseInt(e, 10, 64)
	if err != nil || strconv.FormatInt(exp, 10) != e {
		return "", 0, false
	}
	return k, exp, true
}

// CheckLogoutsFile reads a logouts file as NewPosting does and reports
// why it cannot be used.
func CheckLogoutsFile(path string) error {
	_, err := loadLogouts(path, time.Now())
	return err
}

// loadLogouts reads the record at path (empty when path is "" or the
// file is missing), leaving out the sessions expired by now.
func loadLogouts(path string, now time.Time) (*logouts, error) {
	l := &logouts{path: path, ended: map[string]int64{}}
	if path == "" {
		return l, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("newsweb: logouts file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, maxLogoutLine), maxLogoutLine)
	damaged := func(n int) error {
		return fmt.Errorf("newsweb: logouts file %s line %d: damaged; it may name a logged-out session, so newsweb does not start: "+
			"remove the file (sessions logged out before then work again until they expire) or change posting.key_file (every session ends)", path, n)
	}
	n := 0
	for sc.Scan() {
		n++
		key, exp, ok := parseLogoutLine(sc.Bytes())
		if !ok {
			return nil, damaged(n)
		}
		if exp >= now.Unix() {
			l.ended[key] = exp
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, damaged(n + 1)
		}
		return nil, fmt.Errorf("newsweb: logouts file %s: %w", path, err)
	}
	return l, nil
}
