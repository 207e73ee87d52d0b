package cluster

import (
	"bytes"
	"testing"
)

// FuzzAppendSpoolForm: for any article the ingest machine could pass on
// (a header section that parses), the wire form appendSpoolForm makes
// with one copy of the body equals proto.AppendWire of the whole article
// with our Path, and both fail alike.
func FuzzAppendSpoolForm(f *testing.F) {
	for _, a := range spoolFormSeeds {
		f.Add([]byte(a), "feed.example")
	}
	f.Add([]byte("Path: a\r\n\r\n"), "")
	f.Fuzz(func(t *testing.T, article []byte, pathHost string) {
		checkSpoolForm(t, article, pathHost)
	})
}

// FuzzCRLFOnly: crlfOnly agrees with proto.AppendWire's test (as many
// CRLFs as LFs) on any bytes.
func FuzzCRLFOnly(f *testing.F) {
	for _, s := range []string{"", "\n", "\r\n", "a\r\nb\nc", "\n\r\n", "\r\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := bytes.Count(b, []byte("\n")) == bytes.Count(b, []byte("\r\n"))
		if got := crlfOnly(b); got != want {
			t.Fatalf("crlfOnly(%q) = %v, want %v", b, got, want)
		}
	})
}
