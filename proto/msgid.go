package proto

import (
	"errors"
	"fmt"
)

// MaxMessageIDLen is the longest message-id in octets, angle brackets
// included (RFC 5536 §3.1.3, RFC 3977 §3.6).
const MaxMessageIDLen = 250

// ErrBadMessageID is wrapped by every error ValidMessageID and
// ValidNNTPMessageID return.
var ErrBadMessageID = errors.New("bad message-id")

// Character classes for message-ids, indexed by octet (ASCII only; every
// octet >= 0x80 is outside all classes).
const (
	midAtext   = 1 << iota // RFC 5322 §3.2.3 atext
	midMdtext              // RFC 5536 §3.1.3 mdtext: %d33-61 / %d63-90 / %d94-126
	midDotAtom             // atext or "." (dot-atom-text, checked for dot placement apart)
)

var midClass = func() (t [256]uint8) {
	for c := 0x21; c <= 0x7e; c++ {
		switch c {
		case '(', ')', '<', '>', '[', ']', ':', ';', '@', '\\', ',', '.', '"':
		default:
			t[c] |= midAtext
		}
		if c != '>' && c != '[' && c != '\\' && c != ']' {
			t[c] |= midMdtext
		}
		if t[c]&midAtext != 0 || c == '.' {
			t[c] |= midDotAtom
		}
	}
	return t
}()

// ValidMessageID checks s against the message-id syntax of RFC 5536 §3.1.3:
//
//	msg-id = "<" id-left "@" id-right ">"   ; at most 250 octets
//	id-left = dot-atom-text; id-right = dot-atom-text / "[" *mdtext "]"
//
// and dot-atom-text = 1*atext *("." 1*atext) (RFC 5322 §3.2.3): a dot
// neither first nor last nor doubled, so "<.x@y>" and "<a..b@c>" are refused,
// as INN 2.7 refuses them (its laxmid is off by default). Printable US-ASCII
// only, no whitespace, exactly one "@" outside a literal, both parts
// non-empty. The error names the rule broken and wraps ErrBadMessageID. It
// does not allocate when s is valid.
func ValidMessageID(s string) error {
	// Fast path: one pass with a table lookup per octet, accepting only what
	// the detailed check below accepts; anything else goes there for its
	// error.
	n := len(s)
	if n <= MaxMessageIDLen && n >= 5 && s[0] == '<' && s[n-1] == '>' {
		i := 1
		for i < n-1 && midClass[s[i]]&midDotAtom != 0 {
			i++
		}
		if i > 1 && s[i] == '@' && i+1 < n-1 {
			j := i + 1
			if s[j] != '[' {
				for j < n-1 && midClass[s[j]]&midDotAtom != 0 {
					j++
				}
				if j == n-1 && dotsPlaced(s[1:i]) && dotsPlaced(s[i+1:n-1]) {
					return nil
				}
			} else if s[n-2] == ']' && j < n-2 && dotsPlaced(s[1:i]) {
				j++
				for j < n-2 && midClass[s[j]]&midMdtext != 0 {
					j++
				}
				if j == n-2 {
					return nil
				}
			}
		}
	}
	return validMessageIDSlow(s)
}

// validMessageIDSlow is ValidMessageID rule by rule, naming the one broken.
func validMessageIDSlow(s string) error {
	if err := midFrame(s); err != nil {
		return err
	}
	core := s[1 : len(s)-1]
	at := -1
	for i := 0; i < len(core); i++ {
		c := core[i]
		if c == '@' {
			at = i
			break
		}
		if midClass[c]&midAtext == 0 && c != '.' {
			return midErr(s, fmt.Sprintf("id-left holds %s (RFC 5536 §3.1.3 allows atext and dots)", midChar(c)))
		}
	}
	switch {
	case at < 0:
		return midErr(s, `no "@" between id-left and id-right`)
	case at == 0:
		return midErr(s, "empty id-left before the @")
	case at == len(core)-1:
		return midErr(s, "empty id-right after the @")
	case !dotsPlaced(core[:at]):
		return midErr(s, "id-left has a dot first, last or doubled (RFC 5536 §3.1.3 dot-atom-text)")
	}
	right := core[at+1:]
	if right[0] == '[' {
		// no-fold-literal = "[" *mdtext "]"
		if right[len(right)-1] != ']' || len(right) < 2 {
			return midErr(s, `id-right literal "[" is not closed by "]" before ">"`)
		}
		for i := 1; i < len(right)-1; i++ {
			if c := right[i]; midClass[c]&midMdtext == 0 {
				return midErr(s, fmt.Sprintf("id-right literal holds %s (RFC 5536 §3.1.3 mdtext)", midChar(c)))
			}
		}
		return nil
	}
	for i := 0; i < len(right); i++ {
		c := right[i]
		if c == '@' {
			return midErr(s, `more than one "@"`)
		}
		if midClass[c]&midAtext == 0 && c != '.' {
			return midErr(s, fmt.Sprintf("id-right holds %s (RFC 5536 §3.1.3 allows atext and dots, or a [literal])", midChar(c)))
		}
	}
	if !dotsPlaced(right) {
		return midErr(s, "id-right has a dot first, last or doubled (RFC 5536 §3.1.3 dot-atom-text)")
	}
	return nil
}

// dotsPlaced reports whether the dots of x, a run of atext and dots, sit
// where dot-atom-text allows (RFC 5322 §3.2.3): not first, not last, never
// two in a row.
func dotsPlaced(x string) bool {
	if x == "" || x[0] == '.' || x[len(x)-1] == '.' {
		return false
	}
	for i := 1; i < len(x); i++ {
		if x[i] == '.' && x[i-1] == '.' {
			return false
		}
	}
	return true
}

// ValidNNTPMessageID checks only what RFC 3977 §3.6 requires of a
// message-id used as a command argument: "<", one or more printable US-ASCII
// octets other than ">", ">", at most 250 octets. Servers use it to decide
// between a syntax error (501) and an ordinary refusal for CHECK, TAKETHIS
// and IHAVE arguments; articles should pass ValidMessageID.
func ValidNNTPMessageID(s string) error {
	if err := midFrame(s); err != nil {
		return err
	}
	if len(s) == 2 {
		return midErr(s, "empty between < and >")
	}
	return nil
}

// midFrame checks the length, the angle brackets and that every octet is
// printable US-ASCII with no ">" before the last (RFC 3977 §3.6).
func midFrame(s string) error {
	if len(s) > MaxMessageIDLen {
		return midErr(s, fmt.Sprintf("%d octets, longer than %d", len(s), MaxMessageIDLen))
	}
	if len(s) < 2 || s[0] != '<' {
		return midErr(s, `does not start with "<"`)
	}
	if s[len(s)-1] != '>' {
		return midErr(s, `does not end with ">"`)
	}
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f {
			return midErr(s, midChar(c)+" (only printable US-ASCII is allowed)")
		}
		if c == '>' {
			return midErr(s, `">" before the end`)
		}
	}
	return nil
}

func midChar(c byte) string {
	switch {
	case c == ' ' || c == '\t':
		return "whitespace"
	case c < ' ' || c == 0x7f:
		return fmt.Sprintf("control octet 0x%02x", c)
	case c >= 0x80:
		return fmt.Sprintf("non-ASCII octet 0x%02x", c)
	}
	return fmt.Sprintf("%q", c)
}

// A messageIDError names the message-id and the rule it breaks; it matches
// ErrBadMessageID with errors.Is.
type messageIDError struct{ id, rule string }

func (e *messageIDError) Error() string        { return fmt.Sprintf("message-id %q: %s", e.id, e.rule) }
func (e *messageIDError) Is(target error) bool { return target == ErrBadMessageID }

func midErr(s, rule string) error {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return &messageIDError{id: s, rule: rule}
}
