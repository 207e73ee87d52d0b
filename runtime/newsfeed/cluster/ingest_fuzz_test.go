package cluster

import (
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
