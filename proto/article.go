package proto

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Articles move in two forms: native (lines end in LF, as stored by rnews
// and in files) and wire (lines end in CRLF, dot-stuffed and terminated by
// ".\r\n", RFC 3977 §3.1.1). ToWire and FromWire convert between them.

// ToWire converts a native article to wire form: each bare LF becomes CRLF
// (an existing CRLF is left alone), lines starting with "." are dot-stuffed,
// a missing final line ending is added and the block is terminated.
func ToWire(native []byte) []byte {
	return AppendWire(make([]byte, 0, len(native)+len(native)/32+8), native)
}

// AppendWire appends native (LF or CRLF line ends) to dst in wire form, as
// ToWire returns it. An article whose lines all end in CRLF already (what
// an NNTP peer sends) is stuffed in one pass; one with bare LFs goes line
// by line. native may be dst's own bytes before len(dst) (a buffer reused
// for article after article): appends only write after them.
func AppendWire(dst, native []byte) []byte {
	var enc BlockEncoder
	if CRLFOnly(native) {
		return enc.Close(enc.Append(dst, native))
	}
	for len(native) > 0 {
		i := bytes.IndexByte(native, '\n')
		if i < 0 {
			dst = enc.Append(dst, native)
			break
		}
		line := native[:i]
		if i > 0 && native[i-1] == '\r' {
			line = native[:i-1]
		}
		dst = enc.Append(dst, line)
		dst = enc.Append(dst, crlf)
		native = native[i+1:]
	}
	return enc.Close(dst)
}

var crlf = []byte("\r\n")

// CRLFOnly reports whether every LF in b ends a CRLF, so that b's wire form
// needs dot-stuffing only. One IndexByte a line: counting LFs, then CRLFs
// (a bytes.Index call a line) was 13% of a cluster node's CPU on 500 KB
// articles.
func CRLFOnly(b []byte) bool {
	for i := 0; ; i++ {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return true
		}
		i += j
		if i == 0 || b[i-1] != '\r' {
			return false
		}
	}
}

// FromWire converts one complete wire-form block to native form: it undoes
// dot-stuffing (with BlockDecoder) and turns every CRLF into LF. It fails if
// the terminator is missing or anything follows it.
func FromWire(wire []byte) ([]byte, error) {
	d := NewBlockDecoder(len(wire) + 1) // no line limit: the whole block is in hand
	dec, n, done, err := d.Decode(make([]byte, 0, len(wire)), wire)
	if err != nil {
		return nil, fmt.Errorf("article from wire: %w", err)
	}
	if !done {
		return nil, fmt.Errorf("article from wire: block not terminated by \".\\r\\n\"")
	}
	if n != len(wire) {
		return nil, fmt.Errorf("article from wire: %d octets after the terminator", len(wire)-n)
	}
	// CRLF -> LF in place.
	out := dec[:0]
	for len(dec) > 0 {
		i := bytes.IndexByte(dec, '\n')
		if i < 0 {
			out = append(out, dec...)
			break
		}
		line := dec[:i]
		if i > 0 && dec[i-1] == '\r' {
			line = dec[:i-1]
		}
		out = append(out, line...)
		out = append(out, '\n')
		dec = dec[i+1:]
	}
	return out, nil
}

// Date returns the Date field parsed with ParseArticleDate.
func (h Header) Date() (time.Time, error) {
	f, ok := h.Field(HeaderDate)
	if !ok {
		return time.Time{}, fmt.Errorf("article header: Date: %w", ErrMissingHeader)
	}
	t, err := ParseArticleDate(f.Value())
	if err != nil {
		return time.Time{}, fmt.Errorf("article header: %w", err)
	}
	return t, nil
}

// FormatArticleDate formats t as an RFC 5322 §3.3 date-time,
// "Mon, 02 Jan 2006 15:04:05 -0700".
func FormatArticleDate(t time.Time) string { return t.Format("Mon, 02 Jan 2006 15:04:05 -0700") }

// ParseArticleDate parses a Date field value. It accepts RFC 5322 §3.3
// date-time, the obsolete forms of RFC 5322 §4.3 (two- and three-digit years,
// alphabetic zones, military zones taken as -0000, comments and folding
// anywhere), and variants common in old articles: no day of week, a full day
// or month name, RFC 850 "Monday, 02-Jan-06", asctime "Mon Jan  2 15:04:05
// 2006", Unix date "Mon Jan 2 15:04:05 EST 2006", ISO 8601 "2006-01-02
// 15:04:05Z", "+hh:mm" offsets, no seconds, and no zone (taken as UTC). A
// day of week that does not match the date is ignored, as readers do. The
// result carries the article's own zone offset.
func ParseArticleDate(v string) (time.Time, error) {
	t, err := parseDate(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("Date %q: %w", clipS(v), err)
	}
	return t, nil
}

// dateTokens splits a date into at most len(tok) words at whitespace and
// commas, dropping (nested) comments.
func dateTokens(v string, tok *[12]string) ([]string, error) {
	out := tok[:0]
	depth, start := 0, -1
	flush := func(i int) error {
		if start >= 0 {
			if len(out) == len(tok) {
				return errors.New("too many words")
			}
			out = append(out, v[start:i])
			start = -1
		}
		return nil
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '(':
			if err := flush(i); err != nil {
				return nil, err
			}
			depth++
		case c == ')' && depth > 0:
			depth--
		case depth > 0:
			if c == '\\' {
				i++
			}
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',':
			if err := flush(i); err != nil {
				return nil, err
			}
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if depth > 0 {
		return nil, errors.New("unclosed comment")
	}
	if err := flush(len(v)); err != nil {
		return nil, err
	}
	return out, nil
}

func parseDate(v string) (time.Time, error) {
	var buf [12]string
	tok, err := dateTokens(v, &buf)
	if err != nil {
		return time.Time{}, err
	}
	if len(tok) == 0 {
		return time.Time{}, errors.New("empty")
	}
	// Optional day of week, possibly "Mon." or "Monday".
	if isAlpha(tok[0]) || (len(tok[0]) > 1 && tok[0][len(tok[0])-1] == '.' && isAlpha(tok[0][:len(tok[0])-1])) {
		if _, ok := weekday(strings.TrimSuffix(tok[0], ".")); ok {
			tok = tok[1:]
		}
	}
	if len(tok) == 0 {
		return time.Time{}, errors.New("no date after the day of week")
	}
	var (
		year, month, day int
		timeTok          string
		zone             []string
	)
	first := tok[0]
	switch {
	case len(first) >= 8 && isDigits(first[:4]) && first[4] == '-':
		// ISO 8601: 2006-01-02[T15:04:05[zone]] [15:04:05] [zone]
		datePart, rest, _ := strings.Cut(first, "T")
		if strings.IndexByte(datePart, 't') > 0 {
			datePart, rest, _ = strings.Cut(first, "t")
		}
		p := strings.Split(datePart, "-")
		if len(p) != 3 {
			return time.Time{}, fmt.Errorf("ISO date %q is not yyyy-mm-dd", datePart)
		}
		if year, err = dateNum(p[0], 4, 4, "year"); err != nil {
			return time.Time{}, err
		}
		if month, err = dateNum(p[1], 1, 2, "month"); err != nil {
			return time.Time{}, err
		}
		if day, err = dateNum(p[2], 1, 2, "day"); err != nil {
			return time.Time{}, err
		}
		tok = tok[1:]
		if rest != "" {
			timeTok, zone = splitISOTime(rest)
		} else if len(tok) > 0 {
			timeTok, zone = splitISOTime(tok[0])
			tok = tok[1:]
		}
		zone = append(zone, tok...)
	case strings.IndexByte(first, '-') > 0 && first[0] >= '0' && first[0] <= '9':
		// RFC 850: 02-Jan-06 15:04:05 zone
		p := strings.Split(first, "-")
		if len(p) != 3 {
			return time.Time{}, fmt.Errorf("date %q is not dd-mon-yy", first)
		}
		if day, month, year, err = dayMonthYear(p[0], p[1], p[2]); err != nil {
			return time.Time{}, err
		}
		if len(tok) < 2 {
			return time.Time{}, errors.New("no time of day")
		}
		timeTok, zone = tok[1], tok[2:]
	case isDigits(first):
		// RFC 5322: day month year time zone
		if len(tok) < 4 {
			return time.Time{}, errors.New("want day month year time [zone]")
		}
		if day, month, year, err = dayMonthYear(tok[0], tok[1], tok[2]); err != nil {
			return time.Time{}, err
		}
		timeTok, zone = tok[3], tok[4:]
	default:
		// asctime: month day time year, or Unix date: month day time zone year.
		if len(tok) < 4 {
			return time.Time{}, fmt.Errorf("unrecognised date form starting %q", first)
		}
		yi := 3
		if !isDigits(tok[3]) && len(tok) >= 5 && isDigits(tok[4]) {
			yi = 4
		}
		if day, month, year, err = dayMonthYear(tok[1], tok[0], tok[yi]); err != nil {
			return time.Time{}, err
		}
		timeTok = tok[2]
		for i, t := range tok[3:] {
			if i+3 != yi {
				zone = append(zone, t)
			}
		}
	}
	hour, min, sec, err := parseTimeOfDay(timeTok)
	if err != nil {
		return time.Time{}, err
	}
	loc, err := parseZone(zone)
	if err != nil {
		return time.Time{}, err
	}
	if day > daysIn(month, year) {
		return time.Time{}, fmt.Errorf("day %d is past the end of %s %d", day, time.Month(month), year)
	}
	return time.Date(year, time.Month(month), day, hour, min, sec, 0, loc), nil
}

// splitISOTime splits "15:04:05Z" or "15:04:05+01:00" into time and zone.
func splitISOTime(s string) (string, []string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '+' || c == '-' || c == 'Z' || c == 'z' {
			return s[:i], []string{s[i:]}
		}
	}
	return s, nil
}

func dayMonthYear(d, m, y string) (day, month, year int, err error) {
	if day, err = dateNum(d, 1, 2, "day"); err != nil {
		return
	}
	var ok bool
	if month, ok = monthNumber(m); !ok {
		return 0, 0, 0, fmt.Errorf("unknown month %q", m)
	}
	if year, err = dateNum(y, 2, 4, "year"); err != nil {
		return
	}
	// RFC 5322 §4.3: a two-digit year below 50 is 20xx, else 19xx; a
	// three-digit year has 1900 added.
	switch len(y) {
	case 2:
		if year < 50 {
			year += 2000
		} else {
			year += 1900
		}
	case 3:
		year += 1900
	}
	return
}

func dateNum(s string, minLen, maxLen int, what string) (int, error) {
	if len(s) < minLen || len(s) > maxLen || !isDigits(s) {
		return 0, fmt.Errorf("%s %q is not %d to %d digits", what, s, minLen, maxLen)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	if what == "day" && (n < 1 || n > 31) {
		return 0, fmt.Errorf("day %d out of range", n)
	}
	if what == "month" && (n < 1 || n > 12) {
		return 0, fmt.Errorf("month %d out of range", n)
	}
	return n, nil
}

// parseTimeOfDay parses hh:mm[:ss[.frac]] (RFC 5322 §3.3 time-of-day; a
// fraction, from ISO 8601, is dropped; a leap second 60 is allowed).
func parseTimeOfDay(s string) (h, m, sec int, err error) {
	if i := strings.IndexByte(s, '.'); i >= 0 && isDigits(s[i+1:]) {
		s = s[:i]
	}
	hs, rest, ok1 := strings.Cut(s, ":")
	ms, ss, ok2 := strings.Cut(rest, ":")
	if !ok1 || strings.IndexByte(ss, ':') >= 0 {
		return 0, 0, 0, fmt.Errorf("time %q is not hh:mm[:ss]", s)
	}
	if h, err = dateNum(hs, 1, 2, "hour"); err != nil {
		return
	}
	if m, err = dateNum(ms, 2, 2, "minute"); err != nil {
		return
	}
	if ok2 {
		if sec, err = dateNum(ss, 2, 2, "second"); err != nil {
			return
		}
	}
	if h > 23 || m > 59 || sec > 60 {
		return 0, 0, 0, fmt.Errorf("time %q out of range", s)
	}
	return h, m, sec, nil
}

// obsZones are the zone names of RFC 5322 §4.3 plus names common in old
// articles.
var obsZones = map[string]int{
	"UT": 0, "GMT": 0, "UTC": 0, "Z": 0, "WET": 0,
	"EST": -5 * 60, "EDT": -4 * 60, "CST": -6 * 60, "CDT": -5 * 60,
	"MST": -7 * 60, "MDT": -6 * 60, "PST": -8 * 60, "PDT": -7 * 60,
	"AKST": -9 * 60, "AKDT": -8 * 60, "HST": -10 * 60,
	"BST": 60, "WEST": 60, "CET": 60, "MET": 60, "MEZ": 60,
	"CEST": 120, "MEST": 120, "MESZ": 120, "EET": 120, "EEST": 180,
	"MSK": 180, "JST": 540, "KST": 540, "HKT": 480, "SGT": 480,
	"AEST": 600, "AEDT": 660, "NZST": 720, "NZDT": 780,
}

// parseZone reads the zone words after the time: "+hhmm", "+hh:mm", "+hh",
// a name, or nothing (UTC). RFC 5322 §4.3: military and unknown alphabetic
// zones mean no information and are taken as UTC. A numeric zone may be
// followed by its name ("+0000 GMT"), which is ignored.
func parseZone(z []string) (*time.Location, error) {
	if len(z) == 0 {
		return time.UTC, nil
	}
	w := z[0]
	if len(z) > 2 || (len(z) == 2 && !isAlpha(z[1])) {
		return nil, fmt.Errorf("unexpected words after the zone: %q", strings.Join(z[1:], " "))
	}
	if w[0] == '+' || w[0] == '-' {
		digits := strings.Replace(w[1:], ":", "", 1)
		if len(digits) == 2 {
			digits += "00"
		}
		if len(digits) != 4 || !isDigits(digits) {
			return nil, fmt.Errorf("zone %q is not +hhmm", w)
		}
		hh := int(digits[0]-'0')*10 + int(digits[1]-'0')
		mm := int(digits[2]-'0')*10 + int(digits[3]-'0')
		if hh > 23 || mm > 59 {
			return nil, fmt.Errorf("zone %q out of range", w)
		}
		off := (hh*60 + mm) * 60
		if w[0] == '-' {
			off = -off
		}
		if off == 0 {
			return time.UTC, nil
		}
		return time.FixedZone("", off), nil
	}
	if !isAlpha(w) || len(z) > 1 {
		return nil, fmt.Errorf("zone %q is not +hhmm or a zone name", w)
	}
	if off, ok := obsZones[strings.ToUpper(w)]; ok && off != 0 {
		return time.FixedZone("", off*60), nil
	}
	return time.UTC, nil
}

var monthNames = [...]string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}

// monthNumber accepts a three-letter month or its full name, any case.
func monthNumber(s string) (int, bool) {
	if len(s) < 3 {
		return 0, false
	}
	s = strings.TrimSuffix(s, ".")
	for i, m := range monthNames {
		if strings.EqualFold(s[:min(3, len(s))], m) {
			full := time.Month(i + 1).String()
			if len(s) == 3 || strings.EqualFold(s, full) || (i == 8 && strings.EqualFold(s, "sept")) {
				return i + 1, true
			}
		}
	}
	return 0, false
}

func weekday(s string) (time.Weekday, bool) {
	if len(s) < 3 {
		return 0, false
	}
	for d := time.Sunday; d <= time.Saturday; d++ {
		full := d.String()
		if strings.EqualFold(s, full[:3]) || strings.EqualFold(s, full) {
			return d, true
		}
	}
	return 0, false
}

func daysIn(month, year int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isAlpha(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// ValidateOptions are a relay's acceptance rules for ValidateArticle. The
// zero value checks syntax only.
type ValidateOptions struct {
	// MessageID, if set, is the id the peer offered (CHECK, TAKETHIS,
	// IHAVE); the article's Message-ID must be the same.
	MessageID string
	// PathIdentity, if set, is this relay's path identity: an article whose
	// Path already holds it has looped back (RFC 5537 §3.3).
	PathIdentity string
	// Now enables the Date window checks; it is an input, never read here.
	Now time.Time
	// MaxAge refuses articles dated more than this before Now (INN's
	// artcutoff); 0 means no limit.
	MaxAge time.Duration
	// MaxFuture refuses articles dated more than this after Now; 0 means
	// 24 hours, as INN, and a negative value disables the check.
	MaxFuture time.Duration
	// Size is the article's size in octets and MaxSize the largest
	// accepted; MaxSize 0 means no limit.
	Size, MaxSize int64
}

// A RejectError is an article refusal. Error returns a short reason,
// one line of printable text suited to follow the code of a 437 (IHAVE) or
// 439 (TAKETHIS) response.
type RejectError struct {
	Reason string
}

func (e *RejectError) Error() string { return e.Reason }

func reject(format string, args ...any) error {
	r := fmt.Sprintf(format, args...)
	r = strings.Map(func(c rune) rune {
		if c < ' ' || c == 0x7f {
			return ' '
		}
		return c
	}, r)
	if len(r) > 400 {
		r = r[:400]
	}
	return &RejectError{Reason: r}
}

// requiredHeaders are the fields RFC 5536 §3.1 requires in every article,
// each exactly once (RFC 5322 §3.6).
var requiredHeaders = [...]string{HeaderFrom, HeaderDate, HeaderNewsgroups, HeaderSubject, HeaderMessageID, HeaderPath}

// ValidateArticle decides whether a relay accepts an article with header h
// under opts. It returns nil or a *RejectError: a required header (RFC 5536
// §3.1: From, Date, Newsgroups, Subject, Message-ID, Path) missing, repeated
// or malformed, a Message-ID other than the one offered, a Path loop, a Date
// outside the window, or an article too large.
func ValidateArticle(h Header, opts ValidateOptions) error {
	for _, name := range requiredHeaders {
		switch n := h.Count(name); {
		case n == 0:
			return reject("Missing %s header", name)
		case n > 1:
			return reject("Duplicate %s header", name)
		}
	}
	id := h.Get(HeaderMessageID)
	if err := ValidMessageID(id); err != nil {
		return reject("Bad Message-ID header: %v", err)
	}
	if opts.MessageID != "" && id != opts.MessageID {
		return reject("Message-ID %s does not match the offered %s", id, opts.MessageID)
	}
	if _, err := ParseNewsgroups(h.Get(HeaderNewsgroups)); err != nil {
		return reject("Bad %v", err)
	}
	path := h.Path()
	if strings.Trim(path, "! \t\r\n") == "" {
		return reject("Empty Path header")
	}
	if opts.PathIdentity != "" && PathContains(path, opts.PathIdentity) {
		return reject("Path loop: already holds %s", opts.PathIdentity)
	}
	if strings.TrimSpace(h.From()) == "" {
		return reject("Empty From header")
	}
	date, err := ParseArticleDate(h.Get(HeaderDate))
	if err != nil {
		return reject("Bad %v", err)
	}
	if !opts.Now.IsZero() {
		if opts.MaxAge > 0 && date.Before(opts.Now.Add(-opts.MaxAge)) {
			return reject("Too old: dated %s", FormatArticleDate(date))
		}
		fut := opts.MaxFuture
		if fut == 0 {
			fut = 24 * time.Hour
		}
		if fut > 0 && date.After(opts.Now.Add(fut)) {
			return reject("Dated in the future: %s", FormatArticleDate(date))
		}
	}
	if opts.MaxSize > 0 && opts.Size > opts.MaxSize {
		return reject("Too large: %d octets, limit %d", opts.Size, opts.MaxSize)
	}
	return nil
}
