package newsget

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen is the longest file name (in bytes) SanitizeName returns; most
// file systems allow 255, and ".part" and a collision suffix must still fit.
const MaxNameLen = 200

// SanitizeName turns a name taken from the network (yEnc name=, an NZB
// subject) into a single safe file name: never a path, never "." or "..",
// never hidden, no control or format characters (bidi overrides), no
// NUL, valid UTF-8, at most
// MaxNameLen bytes with the extension kept. A name with nothing usable left
// becomes fallback. Path separators become "_", so "../../etc/passwd" is
// "_.._etc_passwd" after leading dots and separators are trimmed: it
// stays inside the download directory and says where it came from.
func SanitizeName(name, fallback string) string {
	var b strings.Builder
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteByte('_')
		case r == '/' || r == '\\':
			b.WriteByte('_')
		case r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || unicode.Is(unicode.Cc, r) || r == 0xfffd:
			// control characters (NUL, CR, LF, ESC sequences) are dropped
		case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r) || !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z):
			// format characters (bidi overrides and isolates such as U+202E,
			// which shows "\u202egpj.exe" as "exe.jpg"; zero-width spaces
			// and joiners; U+FEFF), private use and unassigned code points
			// are dropped: a name shows what it is
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	s := b.String()
	// No hidden files, no "." or "..", no leading separators' leftovers,
	// no trailing dots or spaces (trouble on some file systems).
	s = strings.TrimLeft(s, ". _")
	s = strings.TrimRight(s, ". ")
	if s == "" {
		return fallback
	}
	return clipName(s, MaxNameLen)
}

// clipName shortens s to at most n bytes, keeping a short extension and
// never cutting a UTF-8 sequence.
func clipName(s string, n int) string {
	if len(s) <= n {
		return s
	}
	ext := ""
	if i := strings.LastIndexByte(s, '.'); i > 0 && len(s)-i <= 16 {
		ext = s[i:]
	}
	keep := n - len(ext)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return strings.TrimRight(s[:keep], ". ") + ext
}

// uniqueName returns name, or name with " (2)", " (3)"... before its
// extension, the first that taken does not report as used.
func uniqueName(name string, taken func(string) bool) string {
	if !taken(name) {
		return name
	}
	base, ext := name, ""
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		base, ext = name[:i], name[i:]
	}
	for k := 2; ; k++ {
		suffix := " (" + strconv.Itoa(k) + ")"
		c := clipName(base, MaxNameLen-len(ext)-len(suffix)) + suffix + ext
		if !taken(c) {
			return c
		}
	}
}
