package queue

import (
	"errors"
	"fmt"
	"strconv"
)

// The backlog line format, shared by the machine (which needs the byte size
// of what it asks spoolfs to write, for the per-peer byte limit) and by
// spoolfs (which writes and reads the lines):
//
//	<token> SP <message-id> [SP <attempts>] LF
//
// The first two fields are innfeed's backlog format ("@0101...@ <id@host>"),
// so innfeed-style tools can read a newsflow backlog and vice versa. The
// optional third field is newsflow's, the mark of a resend (Entry.Resend):
// it is there when the peer was offered the article before (in flight when
// its connection went down or at a stop, deferred, or from a journal a
// crash left behind), and it counts how many times the peer deferred the
// article, 0 when never. So a deferred article keeps its retry count across
// .D files and restarts, and a 439 or 437 to an article read back from any
// backlog file still tells a duplicate (refused) from a rejection. A line
// of two fields (innfeed's, or a first offer's) is an article the peer was
// never offered.
//
// A line is self-validating: it counts only if it ends in LF and
// every field parses. A torn last line after a crash has no LF, or ends in the
// NUL bytes some filesystems leave behind, and is therefore absent, not
// garbage.

// MaxTokenLen is the longest token a backlog line may hold. Spool tokens are
// far shorter (INN's are 36 octets); the bound keeps a corrupt file from
// producing giant entries.
const MaxTokenLen = 255

// MaxMessageIDLen is the longest message-id a backlog line may hold, angle
// brackets included (RFC 5536 §3.1.3: at most 250 octets).
const MaxMessageIDLen = 250

// MaxAttempts is the largest deferral count a line may carry.
const MaxAttempts = 1<<31 - 1

// ErrBadLine is wrapped by every error ParseLine and CheckEntry return.
var ErrBadLine = errors.New("bad backlog line")

// CheckEntry reports whether e can be written to a backlog file and read back
// unchanged: a token of 1..MaxTokenLen printable ASCII octets without spaces,
// a message-id "<...>" of at most MaxMessageIDLen printable ASCII octets
// without spaces, 0 <= Attempts <= MaxAttempts, and Resend set when
// Attempts is not 0 (a deferred entry was offered). The message-id check is
// deliberately the framing one, not the full RFC 5536 grammar: an article the
// spool accepted must be feedable even if its id is unusual.
func CheckEntry(e Entry) error {
	if err := checkField("token", e.Token, MaxTokenLen); err != nil {
		return err
	}
	if err := checkField("message-id", e.MessageID, MaxMessageIDLen); err != nil {
		return err
	}
	if len(e.MessageID) < 3 || e.MessageID[0] != '<' || e.MessageID[len(e.MessageID)-1] != '>' {
		return fmt.Errorf("%w: message-id %q is not enclosed in <>", ErrBadLine, e.MessageID)
	}
	if e.Attempts < 0 || e.Attempts > MaxAttempts {
		return fmt.Errorf("%w: attempts %d out of range", ErrBadLine, e.Attempts)
	}
	if e.Attempts > 0 && !e.Resend {
		return fmt.Errorf("%w: deferred %d times but not marked as a resend", ErrBadLine, e.Attempts)
	}
	return nil
}

// checkField accepts 1..max octets in %x21-7E.
func checkField(name, s string, max int) error {
	if len(s) == 0 {
		return fmt.Errorf("%w: empty %s", ErrBadLine, name)
	}
	if len(s) > max {
		return fmt.Errorf("%w: %s of %d octets (limit %d)", ErrBadLine, name, len(s), max)
	}
	i := 0
	for i+8 <= len(s) && printable8(load8(s, i)) { // most of a field
		i += 8
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: %s holds octet %#02x at %d", ErrBadLine, name, c, i)
		}
	}
	return nil
}

// LineLen is the number of octets AppendLine writes for e, LF included.
func LineLen(e Entry) int64 {
	n := len(e.Token) + 1 + len(e.MessageID) + 1
	if e.Resend || e.Attempts > 0 {
		n += 1 + decimalLen(e.Attempts)
	}
	return int64(n)
}

func decimalLen(v int) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

// AppendLine appends the backlog line of e to dst. Only the token, the
// message-id and, for a resend, Attempts are written; Size and Offered do
// not survive a trip through a file. e must pass CheckEntry.
func AppendLine(dst []byte, e Entry) []byte {
	dst = append(dst, e.Token...)
	dst = append(dst, ' ')
	dst = append(dst, e.MessageID...)
	if e.Resend || e.Attempts > 0 {
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(e.Attempts), 10)
	}
	return append(dst, '\n')
}

// ParseLine parses one backlog line, which must end in LF, into an entry
// with Size 0 and a zero Offered time, and Resend set when the line has a
// third field. Anything else (missing LF, empty or extra fields, octets
// outside %x21-7E, an attempts field that is not a canonical decimal in
// 0..MaxAttempts) is an error wrapping ErrBadLine.
//
// A replayed backlog is parsed line by line as the peer's connections
// take it (draining 2 KB articles to four peers, ParseLine was ~11% of
// newsfeed's CPU), so a well-formed line takes one pass over its octets
// and one allocation, for the token and the message-id together. Any line
// that pass does not accept as it stands goes through parseLineFields,
// which says what is wrong (the errors are the same either way).
func ParseLine(line []byte) (Entry, error) {
	sp1, end, sp2, ok := scanLine(line)
	if !ok {
		return parseLineFields(line)
	}
	s := string(line[:end])
	return withAttempts(Entry{Token: s[:sp1], MessageID: s[sp1+1:]}, line, sp2)
}

// ParseLineString is ParseLine for a line held in a string: the entry's
// token and message-id are substrings of line, so a well-formed line
// costs no allocation. A reader that turns a whole run of lines into one
// string parses them all for that string's one allocation (ParseLine's
// one per line was 60% of the objects newsfeed allocated draining 2 KB
// articles to four peers). The entries keep line's memory alive.
func ParseLineString(line string) (Entry, error) {
	sp1, end, sp2, ok := scanLine(line)
	if !ok {
		return parseLineFields([]byte(line))
	}
	return withAttempts(Entry{Token: line[:sp1], MessageID: line[sp1+1 : end]}, line, sp2)
}

// CheckLine reports whether line is a backlog line ParseLine accepts,
// and the attempts it carries, without keeping (or allocating) its
// fields: for counting the entries of a file.
func CheckLine(line []byte) (attempts int, err error) {
	_, _, sp2, ok := scanLine(line)
	if !ok {
		e, err := parseLineFields(line)
		return e.Attempts, err
	}
	e, err := withAttempts(Entry{}, line, sp2)
	return e.Attempts, err
}

// scanLine is the one pass of ParseLine over a well-formed line: the
// offsets of the space after the token (sp1), of the end of the
// message-id (end) and of the space before the attempts (sp2, -1 when
// there are none). ok is false for any line it does not accept as it
// stands, which parseLineFields then examines.
func scanLine[T string | []byte](line T) (sp1, end, sp2 int, ok bool) {
	n := len(line)
	if n == 0 || line[n-1] != '\n' {
		return 0, 0, 0, false
	}
	body := line[:n-1]
	sp1, sp2 = -1, -1 // the spaces after the token and after the id
	for i := 0; i < len(body); i++ {
		// Eight octets at a time while none is a space or out of range
		// (most of a line): a third of the time of one at a time.
		for i+8 <= len(body) && printable8(load8(body, i)) {
			i += 8
		}
		if i == len(body) {
			break
		}
		c := body[i]
		if c-0x21 <= 0x7e-0x21 { // %x21-7E, in one unsigned compare
			continue
		}
		switch {
		case c != ' ':
			return 0, 0, 0, false // an octet no field may hold
		case sp1 < 0:
			sp1 = i
		case sp2 < 0:
			sp2 = i
		default:
			return 0, 0, 0, false // a fourth field
		}
	}
	end = len(body) // of the message-id
	if sp2 >= 0 {
		end = sp2
	}
	if sp1 <= 0 || sp1 > MaxTokenLen || end-sp1-1 < 3 || end-sp1-1 > MaxMessageIDLen ||
		body[sp1+1] != '<' || body[end-1] != '>' {
		return 0, 0, 0, false
	}
	return sp1, end, sp2, true
}

// load8 returns the eight octets of b from i on, the first in the low
// byte (the compiler makes the shifts one load).
func load8[T string | []byte](b T, i int) uint64 {
	b = b[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// printable8 reports whether every octet of w is in %x21-7E, by the
// word-at-a-time tests of "Bit Twiddling Hacks" (hasless(w, 0x21): some
// octet is below 0x21; hasmore(w, 0x7e), with w's own high bits: some
// octet is above 0x7E). Each test is exact for the word as a whole,
// which is all that is asked.
func printable8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return ((w-ones*0x21)&^w|(w+ones)|w)&highs == 0
}

// withAttempts sets e.Attempts from the field after sp2 of a line
// scanLine accepted, and marks e a resend (no field when sp2 is -1: a
// first offer).
func withAttempts[T string | []byte](e Entry, line T, sp2 int) (Entry, error) {
	if sp2 < 0 {
		return e, nil
	}
	a, err := parseAttempts(line[sp2+1 : len(line)-1])
	if err != nil {
		return Entry{}, err
	}
	e.Attempts, e.Resend = a, true
	return e, nil
}

// parseLineFields is ParseLine field by field, with an error that says
// which field is wrong and how.
func parseLineFields(line []byte) (Entry, error) {
	n := len(line)
	if n == 0 || line[n-1] != '\n' {
		return Entry{}, fmt.Errorf("%w: no LF at the end", ErrBadLine)
	}
	body := line[:n-1]
	var f [3][]byte
	nf := 0
	start := 0
	for i := 0; i <= len(body); i++ {
		if i < len(body) && body[i] != ' ' {
			continue
		}
		if nf == len(f) {
			return Entry{}, fmt.Errorf("%w: more than 3 fields", ErrBadLine)
		}
		f[nf] = body[start:i]
		nf++
		start = i + 1
	}
	if nf < 2 {
		return Entry{}, fmt.Errorf("%w: want <token> <message-id>", ErrBadLine)
	}
	e := Entry{Token: string(f[0]), MessageID: string(f[1])}
	if err := CheckEntry(e); err != nil {
		return Entry{}, err
	}
	if nf == 3 {
		a, err := parseAttempts(f[2])
		if err != nil {
			return Entry{}, err
		}
		e.Attempts, e.Resend = a, true
	}
	return e, nil
}

// parseAttempts accepts the canonical decimal form of 0..MaxAttempts, so that
// a parsed line re-encodes to the same bytes.
func parseAttempts[T string | []byte](b T) (int, error) {
	if len(b) == 0 || len(b) > 10 || (b[0] == '0' && len(b) > 1) {
		return 0, fmt.Errorf("%w: attempts %q is not a decimal in 0..%d", ErrBadLine, b, MaxAttempts)
	}
	v := 0
	for i := 0; i < len(b); i++ {
		if c := b[i]; c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: attempts %q is not a decimal", ErrBadLine, b)
		}
		v = v*10 + int(b[i]-'0')
	}
	if v > MaxAttempts {
		return 0, fmt.Errorf("%w: attempts %q out of range", ErrBadLine, b)
	}
	return v, nil
}

// Kind says which of a peer's backlog files an entry is written to.
type Kind byte

// The two kinds of write-only backlog file.
const (
	// KindBacklog files, <peer>.B.<ts>, hold articles that could not be
	// sent: the memory queue overflowed or no connection was up.
	KindBacklog Kind = 'B'
	// KindDeferred files, <peer>.D.<ts>, hold articles the peer answered
	// "try again later" (RFC 4644 §2.4 431, RFC 3977 §6.3.2 436).
	KindDeferred Kind = 'D'
)

// String returns "B" or "D".
func (k Kind) String() string { return string(rune(k)) }

// FileName is the name of a backlog file: <peer>.<B|D>.<ts> with ts the
// lowercase hexadecimal Unix time the file was opened.
func FileName(peer string, k Kind, ts int64) string {
	return peer + "." + string(rune(k)) + "." + strconv.FormatInt(ts, 16)
}

// ReplayName is the name of a peer's replay file, <peer>.P: the one backlog
// file currently being sent again.
func ReplayName(peer string) string { return peer + ".P" }

// CheckpointName is the file holding how far <peer>.P has been dealt with.
func CheckpointName(peer string) string { return peer + ".P.ckpt" }

// QuarantineName is where a replay file that could not be read is moved
// (quarantined, never deleted): <peer>.Q.<ts>.
func QuarantineName(peer string, ts int64) string {
	return peer + ".Q." + strconv.FormatInt(ts, 16)
}

// JournalName is the name of a journal file, <peer>.J.<ts>, with ts as in
// FileName. Timestamps come from the same sequence as the .B and .D files', so
// a journal renamed to <peer>.B.<ts> at recovery takes a free name.
func JournalName(peer string, ts int64) string {
	return peer + ".J." + strconv.FormatInt(ts, 16)
}

// ParseJournalName reports whether name is one of peer's journal files and
// returns its timestamp, with the rules of ParseFileName.
func ParseJournalName(peer, name string) (int64, bool) {
	if len(name) < len(peer)+4 || name[:len(peer)] != peer || name[len(peer):len(peer)+3] != ".J." {
		return 0, false
	}
	// The .B form of the name has the same timestamp rules.
	_, ts, ok := ParseFileName(peer, peer+".B."+name[len(peer)+3:])
	return ts, ok
}

// ParseFileName reports whether name is one of peer's .B or .D files and
// returns its kind and timestamp. The timestamp must be 1..16 lowercase hex
// digits without a leading zero (so that FileName gives the name back), and
// the name must be exactly peer + ".B." or ".D." + ts: another peer whose
// name starts with this one ("news.example" and "news.example.B") is never
// mistaken for it.
func ParseFileName(peer, name string) (Kind, int64, bool) {
	if len(name) < len(peer)+4 || name[:len(peer)] != peer || name[len(peer)] != '.' {
		return 0, 0, false
	}
	rest := name[len(peer)+1:]
	k := Kind(rest[0])
	if (k != KindBacklog && k != KindDeferred) || rest[1] != '.' {
		return 0, 0, false
	}
	hex := rest[2:]
	if len(hex) == 0 || len(hex) > 16 || (hex[0] == '0' && len(hex) > 1) {
		return 0, 0, false
	}
	var ts uint64
	for i := 0; i < len(hex); i++ {
		c := hex[i]
		switch {
		case c >= '0' && c <= '9':
			ts = ts<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			ts = ts<<4 | uint64(c-'a'+10)
		default:
			return 0, 0, false
		}
	}
	if ts > 1<<63-1 {
		return 0, 0, false
	}
	return k, int64(ts), true
}
