package proto

import (
	"bytes"
	"testing"
)

var wireCases = []string{
	"", "a", "a\n", "a\r\n", ".\r\n", "..\n", "Subject: x\r\n\r\n.dot\r\nline\r\n",
	"mixed\r\nbare\nends\r\n", "a\r\r\n", "no end", ".", "\n\n.\n", "x\r\n.\r\n.\r\n",
	"\r", "a\r", // an unterminated last line ending in CR: the CR is content (FuzzAppendWire found the disagreement)
}

// toWireLines is the slow reference: line by line, each line's end made
// CRLF, each line stuffed on its own.
func toWireLines(native []byte) []byte {
	var out []byte
	for len(native) > 0 {
		line := native
		i := bytes.IndexByte(native, '\n')
		if i >= 0 {
			// A CR before the LF is part of the line's end.
			line, native = bytes.TrimSuffix(native[:i], []byte("\r")), native[i+1:]
		} else {
			// An unterminated last line is all content, a final CR
			// included (as ToWire always did: FuzzWireRoundTrip keeps it).
			native = nil
		}
		if len(line) > 0 && line[0] == '.' {
			out = append(out, '.')
		}
		out = append(append(out, line...), "\r\n"...)
	}
	return append(out, ".\r\n"...)
}

// checkWire: AppendWire agrees with the reference, also when native is the
// head of dst's own buffer (as the relay's store calls it).
func checkWire(t *testing.T, native []byte) {
	t.Helper()
	want := toWireLines(native)
	if got := ToWire(native); !bytes.Equal(got, want) {
		t.Fatalf("ToWire(%q) = %q, want %q", native, got, want)
	}
	for _, extra := range []int{0, 3, 1 << 12} {
		buf := make([]byte, len(native), len(native)+extra)
		copy(buf, native)
		full := AppendWire(buf, buf)
		if !bytes.Equal(full[:len(native)], native) || !bytes.Equal(full[len(native):], want) {
			t.Fatalf("AppendWire over its own buffer (cap +%d) of %q = %q, want the input then %q", extra, native, full, want)
		}
	}
}

func TestAppendWire(t *testing.T) {
	for _, c := range wireCases {
		checkWire(t, []byte(c))
	}
}

// FuzzAppendWire: AppendWire agrees with the line-by-line reference on any
// input.
func FuzzAppendWire(f *testing.F) {
	for _, c := range wireCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, native []byte) { checkWire(t, native) })
}

// TestPathThenWire: the spool's form, as the relay makes it in one buffer:
// the Path identity prepended, then the wire form appended after it.
func TestPathThenWire(t *testing.T) {
	for _, tc := range []struct{ name, data, host, want string }{
		{"path prepended, body stuffed", "Path: up!x\r\nSubject: s\r\n\r\n.dot\r\nend\r\n", "relay.example",
			"Path: relay.example!up!x\r\nSubject: s\r\n\r\n..dot\r\nend\r\n.\r\n"},
		{"no space after the colon", "Path:up!x\r\n\r\nb\r\n", "relay.example",
			"Path: relay.example!up!x\r\n\r\nb\r\n.\r\n"},
		{"a header line that begins with a dot is stuffed", "Path: up\r\n.X: y\r\n\r\nb\r\n", "r",
			"Path: r!up\r\n..X: y\r\n\r\nb\r\n.\r\n"},
		{"no body", "Path: up\r\nSubject: s\r\n", "r", "Path: r!up\r\nSubject: s\r\n.\r\n"},
		{"bare LFs (an injected file)", "Path: up\n\n.b\n", "r", "Path: r!up\r\n\r\n..b\r\n.\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, err := ParseHeaders([]byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			withPath, err := PrependPathIdentity(nil, []byte(tc.data), h, tc.host)
			if err != nil {
				t.Fatal(err)
			}
			full := AppendWire(withPath, withPath)
			if got := string(full[len(withPath):]); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
