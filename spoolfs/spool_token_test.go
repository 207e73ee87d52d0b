package spoolfs

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTokenText(t *testing.T) {
	tests := []struct {
		name string
		tok  Token
		text string
	}{
		{"first article", Token{Seg: 1, Off: 48, Len: 3}, "@000000010000000000000030" + "00000003@"},
		{"brief example", Token{Seg: 1, Off: 0xdeadbeef, Len: 0xabcd}, "@0000000100000000DEADBEEF0000ABCD@"},
		{"all ones", Token{Seg: 0xffffffff, Off: 0xffffffffffffffff, Len: 0xffffffff}, "@" + strings.Repeat("F", 32) + "@"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.tok.String(); got != tc.text {
				t.Errorf("String() = %q, want %q", got, tc.text)
			}
			got, err := ParseToken(tc.text)
			if err != nil {
				t.Fatalf("ParseToken(%q): %v", tc.text, err)
			}
			if diff := cmp.Diff(tc.tok, got); diff != "" {
				t.Errorf("ParseToken(%q) (-want +got):\n%s", tc.text, diff)
			}
			lower, err := ParseToken(strings.ToLower(tc.text))
			if err != nil || lower != tc.tok {
				t.Errorf("ParseToken(lower case %q) = %v, %v; want %v", tc.text, lower, err, tc.tok)
			}
			var u Token
			if err := u.UnmarshalText([]byte(tc.text)); err != nil || u != tc.tok {
				t.Errorf("UnmarshalText(%q) = %v, %v", tc.text, u, err)
			}
		})
	}
}

func TestParseTokenRejects(t *testing.T) {
	tests := []struct{ name, text string }{
		{"empty", ""},
		{"zero token addresses nothing", "@" + strings.Repeat("0", 32) + "@"},
		{"INN's 36-digit token", "@030000000000000000000000000000001234@"},
		{"short", "@0000000100000000DEADBEEF0000ABC@"},
		{"no closing at", "@0000000100000000DEADBEEF0000ABCD "},
		{"no opening at", " 0000000100000000DEADBEEF0000ABCD@"},
		{"non-hex digit", "@0000000100000000DEADBEEF0000ABCG@"},
		{"sign", "@+000000100000000DEADBEEF0000ABCD@"},
		{"message-id instead", "<0000000100000000DEADBEEF0000ABC>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := ParseToken(tc.text)
			if !errors.Is(err, ErrBadToken) {
				t.Errorf("ParseToken(%q) = %v, %v; want ErrBadToken", tc.text, tok, err)
			}
		})
	}
}

// FuzzParseToken: whatever parses prints back as the same text (up to the
// case of hex digits), and every token survives String -> ParseToken.
func FuzzParseToken(f *testing.F) {
	f.Add("@0000000100000000DEADBEEF0000ABCD@", uint32(1), uint64(48), uint32(3))
	f.Add("@0000000100000000deadbeef0000abcd@", uint32(7), uint64(1<<40), uint32(1<<20))
	f.Add("@030000000000000000000000000000001234@", uint32(0), uint64(0), uint32(0))
	f.Add("", uint32(0xffffffff), uint64(0xffffffffffffffff), uint32(0xffffffff))
	f.Fuzz(func(t *testing.T, text string, seg uint32, off uint64, n uint32) {
		if tok, err := ParseToken(text); err == nil {
			if got := tok.String(); got != strings.ToUpper(text) {
				t.Errorf("ParseToken(%q).String() = %q", text, got)
			}
			if tok.IsZero() {
				t.Errorf("ParseToken(%q) accepted the zero token", text)
			}
		}
		tok := Token{Seg: seg, Off: off, Len: n}
		back, err := ParseToken(tok.String())
		switch {
		case tok.IsZero():
			if err == nil {
				t.Errorf("ParseToken(zero token text) succeeded")
			}
		case err != nil || back != tok:
			t.Errorf("ParseToken(%q) = %v, %v; want %v", tok.String(), back, err, tok)
		}
	})
}
