package newsfeed

import (
	"bytes"
	"testing"

	"github.com/newsflow/newsflow/proto"
)

var wireCases = []string{
	"", "a", "a\n", "a\r\n", ".\r\n", "..\n", "Subject: x\r\n\r\n.dot\r\nline\r\n",
	"mixed\r\nbare\nends\r\n", "a\r\r\n", "no end", ".", "\n\n.\n", "x\r\n.\r\n.\r\n",
}

// checkWire: appendWire gives proto.ToWire's bytes, also when native is
// the head of dst's own buffer (as store calls it).
func checkWire(t *testing.T, native []byte) {
	t.Helper()
	want := proto.ToWire(native)
	if got := appendWire(nil, native); !bytes.Equal(got, want) {
		t.Fatalf("appendWire(%q) = %q, want %q", native, got, want)
	}
	for _, extra := range []int{0, 3, 1 << 12} {
		buf := make([]byte, len(native), len(native)+extra)
		copy(buf, native)
		full := appendWire(buf, buf)
		if !bytes.Equal(full[:len(native)], native) || !bytes.Equal(full[len(native):], want) {
			t.Fatalf("appendWire over its own buffer (cap +%d) of %q = %q, want the input then %q", extra, native, full, want)
		}
	}
}

func TestAppendWire(t *testing.T) {
	for _, c := range wireCases {
		checkWire(t, []byte(c))
	}
}

// FuzzAppendWire: appendWire agrees with proto.ToWire (the reference) on
// any input.
func FuzzAppendWire(f *testing.F) {
	for _, c := range wireCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, native []byte) { checkWire(t, native) })
}
