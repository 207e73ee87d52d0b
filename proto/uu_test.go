package proto

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

type uuResult struct {
	Out      []byte
	Consumed int
	Done     bool
	File     UUFile
	Err      string
	Verify   string
}

// streamUU feeds body to a UUDecoder in pieces ending at cuts, draining a
// destination of the given room after every call.
func streamUU(t testing.TB, body []byte, cuts []int, room int) uuResult {
	var d UUDecoder
	var r uuResult
	buf := make([]byte, 0, room)
	pos := 0
	for _, end := range append(cuts, len(body)) {
		if end < pos || end > len(body) {
			continue
		}
		for !d.Done() {
			out, n, err := d.Feed(buf[:0], body[pos:end])
			if err != nil && r.Err == "" {
				r.Err = err.Error()
			}
			if len(out) > room {
				t.Fatalf("wrote %d bytes into room %d", len(out), room)
			}
			r.Out = append(r.Out, out...)
			pos += n
			if n == 0 && len(out) == 0 {
				break // this piece is used up
			}
		}
	}
	r.Consumed, r.Done, r.File, r.Verify = pos, d.Done(), d.File(), errString(d.Verify())
	return r
}

func TestUUDecodeCases(t *testing.T) {
	cat := "begin 644 cat.txt\r\n#0V%T\r\n`\r\nend\r\n"
	for _, tc := range []struct {
		name string
		body string
		want uuResult // Consumed -1 means all
	}{
		{"classic", cat + ".\r\n",
			uuResult{Out: []byte("Cat"), Consumed: -1, Done: true, File: UUFile{Name: "cat.txt", Mode: 0o644, HasBegin: true, HasEnd: true, Size: 3}}},
		{"text around, pipelined response after",
			"Here is the file:\r\n\r\nbegin 600 my cat.txt  \r\n#0V%T\r\n`\r\nend\r\n-- \r\nsig\r\n.\r\n211 1 1 1 g\r\n",
			uuResult{Out: []byte("Cat"), Consumed: len("Here is the file:\r\n\r\nbegin 600 my cat.txt  \r\n#0V%T\r\n`\r\nend\r\n-- \r\nsig\r\n.\r\n"), Done: true,
				File: UUFile{Name: "my cat.txt", Mode: 0o600, HasBegin: true, HasEnd: true, Size: 3}}},
		{"spaces for zero, trailing spaces stripped, bare LF, blank line, checksum char",
			"begin 644 z\n$    \n\n#0V%TX\n \nend\n.\n",
			uuResult{Out: []byte("\x00\x00\x00\x00Cat"), Consumed: -1, Done: true, File: UUFile{Name: "z", Mode: 0o644, HasBegin: true, HasEnd: true, Size: 7}}},
		{"dot-stuffed data line (14 bytes)",
			"begin 644 d\r\n..86)C9&5F9VAI:FML;6X`\r\n`\r\nend\r\n.\r\n",
			uuResult{Out: []byte("abcdefghijklmn"), Consumed: -1, Done: true, File: UUFile{Name: "d", Mode: 0o644, HasBegin: true, HasEnd: true, Size: 14}}},
		{"no end: truncated", "begin 644 cat.txt\r\n#0V%T\r\n.\r\n",
			uuResult{Out: []byte("Cat"), Consumed: -1, Done: true, File: UUFile{Name: "cat.txt", Mode: 0o644, HasBegin: true, Size: 3},
				Verify: "uu: cat.txt: no end line (truncated body?)"}},
		{"no begin", "just text\r\nbegin-base64 644 x\r\nbegin 9 bad mode\r\n.\r\n",
			uuResult{Consumed: -1, Done: true, Verify: "uu: no begin line in body"}},
		{"bad character in data", "begin 644 x\r\n#0V%T\r\n#0v%t\r\nend\r\n.\r\n",
			uuResult{Out: []byte("Cat"), Consumed: -1, Done: true, File: UUFile{Name: "x", Mode: 0o644, HasBegin: true, Size: 3},
				Err: `uu: x: line "#0v%t": invalid character 0x76`, Verify: `uu: x: line "#0v%t": invalid character 0x76`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			want := tc.want
			if want.Consumed < 0 {
				want.Consumed = len(body)
			}
			for _, room := range []int{1, 2, 64} {
				for cut := 0; cut <= len(body); cut++ {
					got := streamUU(t, body, []int{cut}, room)
					if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
						t.Fatalf("room %d cut %d (-want +got):\n%s", room, cut, diff)
					}
				}
			}
		})
	}
}

func TestUURoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{0, 1, 2, 3, 14, 44, 45, 46, 89, 90, 91, 1000, 4099} {
		data := yencTestData(rng, n)
		body := UUEncode(nil, data, UUOptions{Name: "file name.bin", Mode: 0o755, Wire: true})
		got := streamUU(t, body, []int{rng.IntN(len(body) + 1)}, 100)
		want := uuResult{Out: data, Consumed: len(body), Done: true, File: UUFile{Name: "file name.bin", Mode: 0o755, HasBegin: true, HasEnd: true, Size: int64(n)}}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("n=%d (-want +got):\n%s", n, diff)
		}
		for _, l := range strings.Split(string(body), "\r\n") {
			if len(l) > 62 {
				t.Fatalf("line of %d characters", len(l))
			}
		}
	}
}

// FuzzUURoundTrip: decode(encode(x)) == x, with the wire bytes split at a
// fuzzed point and a fuzzed destination size.
func FuzzUURoundTrip(f *testing.F) {
	f.Add([]byte("Cat"), uint32(5), uint8(3))
	f.Add(bytes.Repeat([]byte{0, 0xff, '.', '\n'}, 30), uint32(70), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, cut uint32, room uint8) {
		body := UUEncode(nil, data, UUOptions{Name: "f", Wire: true})
		got := streamUU(t, body, []int{int(cut % uint32(len(body)+1))}, int(room)+1)
		if got.Err != "" || got.Verify != "" || !got.Done || got.Consumed != len(body) || !bytes.Equal(got.Out, data) {
			t.Fatalf("err %q verify %q done %v consumed %d/%d decoded %q", got.Err, got.Verify, got.Done, got.Consumed, len(body), got.Out)
		}
	})
}

// FuzzUUDecode: on any input the decoder never panics, never writes beyond
// the room it has, and gives the same result however the input is split.
func FuzzUUDecode(f *testing.F) {
	f.Add([]byte("begin 644 cat.txt\r\n#0V%T\r\n`\r\nend\r\n.\r\n"), uint32(9), uint8(2))
	f.Add([]byte("text\nbegin 644 z\n$    \n\n#0V%TX\n..86)C9&5F9VAI:FML;6X`\n \nend\n.\n211 x\n"), uint32(30), uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, cut uint32, room uint8) {
		whole := streamUU(t, body, nil, 64)
		split := streamUU(t, body, []int{int(cut % uint32(len(body)+1))}, int(room)+1)
		if diff := cmp.Diff(whole, split, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("split decode differs (-whole +split):\n%s", diff)
		}
	})
}
