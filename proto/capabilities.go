package proto

import (
	"fmt"
	"strconv"
	"strings"
)

// Capability labels of RFC 3977 §5.2 and its extensions (RFC 4643 AUTHINFO
// and SASL, RFC 4642 STARTTLS, RFC 4644 STREAMING, RFC 8054 COMPRESS).
const (
	CapVersion        = "VERSION"
	CapReader         = "READER"
	CapIHave          = "IHAVE"
	CapStreaming      = "STREAMING"
	CapPost           = "POST"
	CapModeReader     = "MODE-READER"
	CapNewNews        = "NEWNEWS"
	CapOver           = "OVER"
	CapHdr            = "HDR"
	CapList           = "LIST"
	CapAuthinfo       = "AUTHINFO"
	CapSASL           = "SASL"
	CapStartTLS       = "STARTTLS"
	CapImplementation = "IMPLEMENTATION"
	CapCompress       = "COMPRESS"
)

// A Capability is one line of a CAPABILITIES response: its label in upper
// case and its arguments as sent.
type Capability struct {
	Label string
	Args  []string
}

// A CapabilitySet is a parsed CAPABILITIES response (RFC 3977 §5.2), in the
// order the server listed it. (The name Capabilities is the command
// constructor in command.go.)
type CapabilitySet struct {
	List []Capability
}

// ParseCapabilities parses the lines of a 101 response's block (without line
// endings; a trailing CRLF or LF is tolerated). RFC 3977 §5.2.1: each line is
// a label, letters, digits and "-" starting with a letter, case-insensitive,
// then arguments separated by whitespace. Blank lines are skipped; a label
// listed twice has its arguments merged into the first, since §3.3.1 lets
// each capability appear once. VERSION is not required to be first, so that
// older servers can be read; Version reports 0 without it.
func ParseCapabilities(lines []string) (CapabilitySet, error) {
	var c CapabilitySet
	for i, l := range lines {
		f := fields(strings.TrimRight(l, "\r\n"))
		if len(f) == 0 {
			continue
		}
		label := strings.ToUpper(f[0])
		if err := validCapLabel(label); err != nil {
			return CapabilitySet{}, fmt.Errorf("capabilities line %d %q: %w", i+1, clipS(l), err)
		}
		for _, a := range f[1:] {
			for _, b := range []byte(a) {
				if b < ' ' || b == 0x7f {
					return CapabilitySet{}, fmt.Errorf("capabilities line %d %q: argument holds %s", i+1, clipS(l), midChar(b))
				}
			}
		}
		if j := c.index(label); j >= 0 {
			c.List[j].Args = append(c.List[j].Args, f[1:]...)
			continue
		}
		cp := Capability{Label: label}
		if len(f) > 1 {
			cp.Args = f[1:]
		}
		c.List = append(c.List, cp)
	}
	return c, nil
}

// ParseCapabilitiesLoose is ParseCapabilities for a client: a line that
// is not a valid capability (RFC 3977 §9.8) is skipped rather than failing
// the list, since a server's odd extension must not stop a client that
// does not use it.
func ParseCapabilitiesLoose(lines []string) CapabilitySet {
	valid := lines[:0:0]
	for _, l := range lines {
		if _, err := ParseCapabilities([]string{l}); err == nil {
			valid = append(valid, l)
		}
	}
	set, _ := ParseCapabilities(valid) // each line parses alone, so all do
	return set
}

// validCapLabel: RFC 3977 §9.8 capability-label = label = ALPHA *(ALPHA / DIGIT / "-").
func validCapLabel(l string) error {
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !('A' <= c && c <= 'Z') && (i == 0 || !('0' <= c && c <= '9' || c == '-')) {
			return fmt.Errorf("label %q: %s at offset %d (RFC 3977 §9.8: a letter, then letters, digits, -)", clipS(l), midChar(c), i)
		}
	}
	return nil
}

func (c CapabilitySet) index(label string) int {
	for i, cp := range c.List {
		if strings.EqualFold(cp.Label, label) {
			return i
		}
	}
	return -1
}

// Has reports whether the server listed label (case-insensitive).
func (c CapabilitySet) Has(label string) bool { return c.index(label) >= 0 }

// Args returns the arguments listed with label, nil if none or absent.
func (c CapabilitySet) Args(label string) []string {
	if i := c.index(label); i >= 0 {
		return c.List[i].Args
	}
	return nil
}

// HasArg reports whether label is listed with argument arg, both
// case-insensitive: HasArg("LIST", "ACTIVE"), HasArg("OVER", "MSGID"),
// HasArg("AUTHINFO", "USER"), HasArg("SASL", "PLAIN"), HasArg("COMPRESS", "DEFLATE").
func (c CapabilitySet) HasArg(label, arg string) bool {
	for _, a := range c.Args(label) {
		if strings.EqualFold(a, arg) {
			return true
		}
	}
	return false
}

// Version returns the highest NNTP version listed with VERSION (2 for RFC
// 3977 servers), or 0 if there is none.
func (c CapabilitySet) Version() int {
	v := 0
	for _, a := range c.Args(CapVersion) {
		if n, err := strconv.Atoi(a); err == nil && n > v {
			v = n
		}
	}
	return v
}

// Implementation returns the IMPLEMENTATION text (RFC 3977 §5.2.2), its
// words joined by single spaces, e.g. "INN 2.7.1".
func (c CapabilitySet) Implementation() string {
	return strings.Join(c.Args(CapImplementation), " ")
}

// AppendCapabilities appends c as the lines of a CAPABILITIES block (each
// with CRLF, not dot-stuffed or terminated: see AppendBlock), for servers.
// VERSION is written first, as RFC 3977 §5.2.2 requires.
func AppendCapabilities(dst []byte, c CapabilitySet) []byte {
	if i := c.index(CapVersion); i >= 0 {
		dst = appendCap(dst, c.List[i])
	}
	for _, cp := range c.List {
		if !strings.EqualFold(cp.Label, CapVersion) {
			dst = appendCap(dst, cp)
		}
	}
	return dst
}

func appendCap(dst []byte, cp Capability) []byte {
	dst = append(dst, strings.ToUpper(cp.Label)...)
	for _, a := range cp.Args {
		dst = append(dst, ' ')
		dst = append(dst, a...)
	}
	return append(dst, '\r', '\n')
}
