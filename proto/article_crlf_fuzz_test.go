package proto

import (
	"bytes"
	"testing"
)

// TestCRLFOnly: CRLFOnly agrees with the count it replaced (as many
// CRLFs as LFs), at the edges of the buffer too.
func TestCRLFOnly(t *testing.T) {
	for _, s := range []string{"", "x", "\n", "\r", "\r\n", "\n\r", "a\r\nb\nc", "a\r\nb\r\n", "\r\r\n", "\n\r\n", "ab\r\ncd\r\n\n", "a\rb\r\n"} {
		want := bytes.Count([]byte(s), []byte("\n")) == bytes.Count([]byte(s), []byte("\r\n"))
		if got := CRLFOnly([]byte(s)); got != want {
			t.Errorf("CRLFOnly(%q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzCRLFOnly: CRLFOnly agrees with the count it replaced (as many
// CRLFs as LFs) on any bytes.
func FuzzCRLFOnly(f *testing.F) {
	for _, s := range []string{"", "\n", "\r\n", "a\r\nb\nc", "\n\r\n", "\r\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := bytes.Count(b, []byte("\n")) == bytes.Count(b, []byte("\r\n"))
		if got := CRLFOnly(b); got != want {
			t.Fatalf("CRLFOnly(%q) = %v, want %v", b, got, want)
		}
	})
}
