package proto

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lines feeds input to a LineBuffer in the given pieces and collects the
// lines it returns, the error if any, and what is left.
func lines(l *LineBuffer, pieces [][]byte) (got []string, rest string, err error) {
	for _, p := range pieces {
		l.Add(p)
		for {
			line, ok, e := l.Next()
			if e != nil {
				return got, string(l.Peek()), e
			}
			if !ok {
				break
			}
			got = append(got, string(line))
		}
	}
	return got, string(l.Rest()), nil
}

func TestLineBuffer(t *testing.T) {
	tests := []struct {
		name    string
		max     int
		in      string
		want    []string
		rest    string
		wantErr string
	}{
		{name: "crlf", in: "200 hi\r\n101 caps\r\n", want: []string{"200 hi", "101 caps"}},
		{name: "bare lf", in: "200 hi\n205\n", want: []string{"200 hi", "205"}},
		{name: "partial kept", in: "200 hi\r\n238 <a", want: []string{"200 hi"}, rest: "238 <a"},
		{name: "cr inside", in: "200 a\rb\r\n", want: []string{"200 a\rb"}},
		{name: "empty line", in: "\r\n", want: []string{""}},
		{name: "exactly max", max: 8, in: "123456\r\n", want: []string{"123456"}},
		{name: "one over max", max: 8, in: "1234567\r\n", wantErr: "line of more than 8 octets"},
		{name: "over max unterminated", max: 8, in: "123456789", wantErr: "line of more than 8 octets"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Whole, byte by byte and cut at every offset: same outcome.
			splits := [][][]byte{{[]byte(tc.in)}}
			var bytewise [][]byte
			for i := range len(tc.in) {
				bytewise = append(bytewise, []byte(tc.in[i:i+1]))
			}
			splits = append(splits, bytewise)
			for k := 1; k < len(tc.in); k++ {
				splits = append(splits, [][]byte{[]byte(tc.in[:k]), []byte(tc.in[k:])})
			}
			for _, pieces := range splits {
				l := &LineBuffer{Max: tc.max}
				got, rest, err := lines(l, pieces)
				if tc.wantErr != "" {
					if err == nil || err.Error() != tc.wantErr+": nntp: line too long" || !errors.Is(err, ErrLineTooLong) {
						t.Fatalf("pieces %q: error %v; want %q wrapping ErrLineTooLong", pieces, err, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("pieces %q: %v", pieces, err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Fatalf("pieces %q: lines (-want +got):\n%s", pieces, diff)
				}
				if rest != tc.rest {
					t.Fatalf("pieces %q: rest %q; want %q", pieces, rest, tc.rest)
				}
			}
		})
	}
}

func TestLineBufferPeekSkipName(t *testing.T) {
	l := &LineBuffer{Name: "response line", Max: 4}
	l.Add([]byte("ab"))
	if got := string(l.Peek()); got != "ab" || l.Buffered() != 2 {
		t.Fatalf("Peek %q Buffered %d", got, l.Buffered())
	}
	l.Skip(1)
	if got := string(l.Rest()); got != "b" {
		t.Fatalf("Rest after Skip: %q", got)
	}
	l.Add([]byte("cdefg"))
	if _, _, err := l.Next(); err == nil || err.Error() != "response line of more than 4 octets: nntp: line too long" {
		t.Fatalf("error %v", err)
	}
}

// FuzzLineBuffer checks that the lines and the error do not depend on how
// the input is split, and agree with bytes.Split on a reference.
func FuzzLineBuffer(f *testing.F) {
	f.Add([]byte("200 inn.example ready\r\n101 Capability list:\r\nVERSION 2\r\n.\r\n"), uint8(3))
	f.Add([]byte("238 <a@b>\n438 <c@d>\r\npartial"), uint8(1))
	f.Add([]byte("x\r\r\n\n\n"), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, cut uint8) {
		whole := &LineBuffer{Max: 64}
		wantLines, wantRest, wantErr := lines(whole, [][]byte{in})
		k := int(cut) % (len(in) + 1)
		split := &LineBuffer{Max: 64}
		gotLines, gotRest, gotErr := lines(split, [][]byte{in[:k], in[k:]})
		if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
			t.Fatalf("errors differ: whole %v, split at %d %v", wantErr, k, gotErr)
		}
		if wantErr != nil {
			return
		}
		if diff := cmp.Diff(wantLines, gotLines); diff != "" || wantRest != gotRest {
			t.Fatalf("split at %d differs (-whole +split):\n%s rest %q vs %q", k, diff, wantRest, gotRest)
		}
		// Reference: every LF-terminated piece, CR before LF removed.
		parts := bytes.SplitAfter(in, []byte("\n"))
		var ref []string
		for _, p := range parts {
			if !bytes.HasSuffix(p, []byte("\n")) {
				if string(p) != wantRest {
					t.Fatalf("rest %q; reference %q", wantRest, p)
				}
				continue
			}
			ref = append(ref, string(bytes.TrimSuffix(bytes.TrimSuffix(p, []byte("\n")), []byte("\r"))))
		}
		if diff := cmp.Diff(ref, wantLines, cmpEmpty); diff != "" {
			t.Fatalf("lines differ from reference (-ref +got):\n%s", diff)
		}
	})
}

var cmpEmpty = cmp.Comparer(func(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
})
