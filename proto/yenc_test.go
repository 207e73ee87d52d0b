package proto

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// yencTestKernels lists the kernels to test: the scalar loop and every
// SIMD kernel this CPU can run.
func yencTestKernels() []uint8 {
	ks := []uint8{kernScalar}
	for _, k := range []uint8{kernAVX2, kernAVX512} {
		if yencKernelAvailable(k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// yencResult is everything observable about one decode, for comparisons.
type yencResult struct {
	Out      []byte
	Consumed int
	Done     bool
	Part     YencPart
	Err      string // the first error Feed returned
	Verify   string // Verify's error after the input ran out
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// refYencDecode is the slow, line-at-a-time reference for YencDecoder. It
// states the decoder's rules (see the theory of operation in
// yenc_decode.go) as plainly as possible: split the wire into lines,
// unstuff, classify, decode.
func refYencDecode(body []byte) yencResult {
	var r yencResult
	p := &r.Part
	phase := phBefore
	esc := false
	fail := func(err error) {
		if r.Err == "" {
			r.Err = err.Error()
		}
		phase = phAfter
	}
	startData := func() error {
		if err := p.headerDone(); err != nil {
			return err
		}
		phase, esc = phData, false
		return nil
	}
	control := func(c []byte) error {
		kw, params := yencKeyword(yencTrimRight(c))
		if phase != phBefore {
			esc = false
		}
		switch string(kw) {
		case "begin":
			if phase != phBefore {
				return yencErrorf(ErrYencHeader, "yenc: part %d: =ybegin before =yend", p.number())
			}
			if err := p.parseBegin(params); err != nil {
				return err
			}
			phase = phHeader
		case "part":
			if phase == phHeader {
				if err := p.parsePart(params); err != nil {
					return err
				}
				phase = phData
			}
		case "end":
			if phase == phBefore {
				return nil
			}
			if phase == phHeader {
				if err := startData(); err != nil {
					return err
				}
			}
			if err := p.parseEnd(params); err != nil {
				return err
			}
			phase = phAfter
		}
		return nil
	}

	pos := 0
	for pos < len(body) {
		j := bytes.IndexByte(body[pos:], '\n')
		complete := j >= 0
		w := body[pos:]
		if complete {
			w = body[pos : pos+j+1]
		}
		pos += len(w)
		if s := string(w); s == ".\r\n" || s == ".\n" {
			r.Done = true
			break
		}
		c := w
		if complete {
			c = w[:len(w)-1]
		}
		if len(c) > 0 && c[0] == '.' {
			c = c[1:] // dot-stuffing, or a sloppy single dot
		}
		if phase == phAfter {
			continue
		}
		if len(c) >= 2 && c[0] == '=' && c[1] == 'y' {
			if len(c) > MaxYencControlLine {
				kw, _ := yencKeyword(c[:MaxYencControlLine])
				if k := string(kw); k == "begin" || k == "part" || k == "end" {
					fail(yencErrorf(ErrYencHeader, "yenc: =y%s line longer than %d octets", kw, MaxYencControlLine))
				}
				continue
			}
			if complete {
				if err := control(c); err != nil {
					fail(err)
				}
			}
			continue
		}
		if !complete && string(c) == "=" {
			continue // might still become "=y"
		}
		switch phase {
		case phBefore:
			continue
		case phHeader:
			if len(bytes.Trim(c, "\r")) == 0 {
				continue // blank line between header and data
			}
			if err := startData(); err != nil {
				fail(err)
				continue
			}
		}
		for _, b := range c {
			if b == '\r' {
				continue
			}
			if !esc && b == '=' {
				esc = true
				continue
			}
			if p.Decoded == p.PartSize() {
				fail(yencErrorf(ErrYencOverflow, "yenc: part %d: more data than the declared %d bytes", p.number(), p.PartSize()))
				break
			}
			if esc {
				r.Out = append(r.Out, b-106)
				esc = false
			} else {
				r.Out = append(r.Out, b-42)
			}
			p.Decoded++
		}
	}
	r.Consumed = pos
	p.CRC = crc32.ChecksumIEEE(r.Out)
	if r.Err != "" {
		r.Verify = r.Err
	} else {
		r.Verify = errString(p.verify())
	}
	return r
}

// streamYenc feeds body to a YencDecoder in pieces ending at the given cut
// points, with room for every decoded byte, and collects what it did.
func streamYenc(t testing.TB, body []byte, cuts []int, kern uint8) yencResult {
	var d YencDecoder
	d.kern = kern
	var r yencResult
	dst := make([]byte, 0, len(body))
	pos := 0
	for _, end := range append(cuts, len(body)) {
		if end < pos || end > len(body) {
			continue
		}
		for pos < end && !d.Done() {
			out, n, err := d.Feed(dst, body[pos:end])
			if err != nil && r.Err == "" {
				r.Err = err.Error()
			}
			if cap(dst) > 0 && &out[:cap(out)][0] != &dst[:cap(dst)][0] {
				t.Fatalf("Feed reallocated dst")
			}
			dst = out
			pos += n
			if n == 0 && err == nil && !d.Done() {
				t.Fatalf("Feed made no progress at %d with room %d", pos, cap(dst)-len(dst))
			}
		}
	}
	r.Out, r.Consumed, r.Done, r.Part = dst, pos, d.Done(), d.Part()
	r.Verify = errString(d.Verify())
	return r
}

// yencPlain encodes s by the basic rule only (add 42), with no escaping, for
// hand-written test bodies.
func yencPlain(s string) string {
	b := []byte(s)
	for i := range b {
		b[i] += 42
	}
	return string(b)
}

func TestYencDecodeCases(t *testing.T) {
	crcOf := func(s string) string { return string(yencAppendHex(nil, crc32.ChecksumIEEE([]byte(s)))) }
	type tc struct {
		name     string
		body     string
		want     string // decoded bytes
		consumed int    // -1: all of body
		done     bool
		err      string // Feed's error
		verify   string // Verify's error
		check    func(t *testing.T, p YencPart)
	}
	cases := []tc{
		{
			name: "single part, CRLF",
			body: "=ybegin line=128 size=5 name=hello.txt\r\n" + yencPlain("hello") + "\r\n=yend size=5 crc32=" + crcOf("hello") + "\r\n.\r\n",
			want: "hello", consumed: -1, done: true,
			check: func(t *testing.T, p YencPart) {
				want := YencPart{Name: "hello.txt", Size: 5, Line: 128, Begin: 1, End: 5, HasHeader: true, HasTrailer: true,
					EndSize: 5, HasCRC32: true, CRC32: crc32.ChecksumIEEE([]byte("hello")), Decoded: 5, CRC: crc32.ChecksumIEEE([]byte("hello"))}
				if diff := cmp.Diff(want, p); diff != "" {
					t.Errorf("part (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "multipart with =ypart, name with spaces, pipelined response after the terminator",
			body: "=ybegin part=3 total=12 line=128 size=100 name= my file (1).bin \r\n=ypart begin=11 end=15\r\n" +
				yencPlain("world") + "\r\n=yend size=5 part=3 pcrc32=" + strings.ToUpper(crcOf("world")) + " crc32=00000000\r\n.\r\n223 0 <next@x>\r\n",
			want: "world", consumed: len("=ybegin part=3 total=12 line=128 size=100 name= my file (1).bin \r\n=ypart begin=11 end=15\r\n" +
				yencPlain("world") + "\r\n=yend size=5 part=3 pcrc32=" + crcOf("world") + " crc32=00000000\r\n.\r\n"), done: true,
			check: func(t *testing.T, p YencPart) {
				if p.Name != "my file (1).bin" || p.Part != 3 || p.Total != 12 || p.Offset() != 10 || p.PartSize() != 5 || !p.Multipart {
					t.Errorf("part = %+v", p)
				}
			},
		},
		{
			name: "dot-stuffed data line and a sloppy single dot",
			body: "=ybegin size=4 name=a\r\n.." + yencPlain("\x04") + "\r\n." + yencPlain("ab") + "\r\n=yend size=4\r\n.\r\n",
			want: "\x04\x04ab", consumed: -1, done: true,
		},
		{
			name: "escapes: NUL LF CR = and an escape pair split across lines",
			body: "=ybegin size=5 name=a\r\n=@=J=M=\r\n}x\r\n=yend size=5\r\n.\r\n",
			want: string([]byte{0xd6, 0xe0, 0xe3, 0x13, 'x' - 42}), consumed: -1, done: true,
		},
		{
			name: "escape then escape char: == decodes the second = as escaped",
			body: "=ybegin size=2 name=a\r\n==k\r\n=yend\r\n.\r\n",
			want: string([]byte{'=' - 106 + 256, 'A'}), consumed: -1, done: true,
		},
		{
			name: "bare LF line endings, CRs inside a line, lowercase crc with 0x and extra spaces",
			body: "=ybegin   line=128  size=2   name=x\n" + yencPlain("A") + "\r\r" + yencPlain("B") + "\n=yend  size=2   crc32=0x" + crcOf("AB") + "  \n.\n",
			want: "AB", consumed: -1, done: true,
		},
		{
			name: "text before =ybegin and after =yend is skipped; =yend without crc",
			body: "hello there\r\n=yfoo\r\n=ybegin size=1 name=a\r\n" + yencPlain("Z") + "\r\n=yend size=1\r\nsig\r\n.. dots\r\n.\r\n",
			want: "Z", consumed: -1, done: true,
		},
		{
			name: "part=1 total=1 without =ypart is a single-part post",
			body: "=ybegin part=1 total=1 line=128 size=1 name=a\r\n\r\n" + yencPlain("Q") + "\r\n=yend size=1 part=1 pcrc32=" + crcOf("Q") + "\r\n.\r\n",
			want: "Q", consumed: -1, done: true,
		},
		{
			name: "empty single part",
			body: "=ybegin size=0 name=a\r\n=yend size=0 crc32=00000000\r\n.\r\n",
			want: "", consumed: -1, done: true,
		},
		{
			name: "part 3 without =ypart is refused",
			body: "=ybegin part=3 total=12 size=100 name=a\r\n" + yencPlain("abc") + "\r\n=yend\r\n.\r\n",
			want: "", consumed: -1, done: true,
			err:    "yenc: part 3 of 12 has no =ypart line",
			verify: "yenc: part 3 of 12 has no =ypart line",
		},
		{
			name: "data beyond the declared size is refused, not written",
			body: "=ybegin size=3 name=a\r\n" + yencPlain("abcdef") + "\r\n=yend size=3\r\n.\r\n",
			want: "abc", consumed: -1, done: true,
			err:    "yenc: part 1: more data than the declared 3 bytes",
			verify: "yenc: part 1: more data than the declared 3 bytes",
		},
		{
			name: "=ypart range outside the file is refused",
			body: "=ybegin part=2 size=10 name=a\r\n=ypart begin=8 end=12\r\n" + yencPlain("abcde") + "\r\n.\r\n",
			want: "", consumed: -1, done: true,
			err:    "yenc: part 2: =ypart begin=8 end=12 outside file size 10",
			verify: "yenc: part 2: =ypart begin=8 end=12 outside file size 10",
		},
		{
			name: "pcrc32 mismatch",
			body: "=ybegin part=3 total=3 size=10 name=a\r\n=ypart begin=6 end=10\r\n" + yencPlain("abcde") + "\r\n=yend size=5 part=3 pcrc32=1a2b3c4d\r\n.\r\n",
			want: "abcde", consumed: -1, done: true,
			verify: "yenc: part 3 crc32 mismatch: want 1a2b3c4d, got " + crcOf("abcde"),
		},
		{
			name: "truncated: no =yend",
			body: "=ybegin size=5 name=a\r\n" + yencPlain("ab") + "\r\n.\r\n",
			want: "ab", consumed: -1, done: true,
			verify: "yenc: part 1: no =yend line (truncated body?)",
		},
		{
			name: "short: =yend but too few bytes",
			body: "=ybegin size=5 name=a\r\n" + yencPlain("ab") + "\r\n=yend size=5\r\n.\r\n",
			want: "ab", consumed: -1, done: true,
			verify: "yenc: part 1: decoded 2 bytes, header declares 5",
		},
		{
			name: "not yEnc at all",
			body: "begin 644 x\r\n`\r\nend\r\n.\r\n",
			want: "", consumed: -1, done: true,
			verify: "yenc: no =ybegin line in body",
		},
		{
			name: "=ybegin without size",
			body: "=ybegin name=a\r\nxx\r\n.\r\n",
			want: "", consumed: -1, done: true,
			err:    "yenc: =ybegin without size=",
			verify: "yenc: =ybegin without size=",
		},
		{
			name: "second =ybegin inside the data",
			body: "=ybegin size=9 name=a\r\n" + yencPlain("ab") + "\r\n=ybegin size=9 name=b\r\n" + yencPlain("cd") + "\r\n.\r\n",
			want: "ab", consumed: -1, done: true,
			err:    "yenc: part 1: =ybegin before =yend",
			verify: "yenc: part 1: =ybegin before =yend",
		},
		{
			name: "over-long =ybegin line",
			body: "=ybegin size=1 name=" + strings.Repeat("n", 2000) + "\r\n" + yencPlain("a") + "\r\n.\r\n",
			want: "", consumed: -1, done: true,
			err:    "yenc: =ybegin line longer than 1024 octets",
			verify: "yenc: =ybegin line longer than 1024 octets",
		},
		{
			name: "no terminator yet: everything consumed, not done",
			body: "=ybegin size=2 name=a\r\n" + yencPlain("AB") + "\r\n=yend size=2\r\n.\r",
			want: "AB", consumed: -1, done: false,
		},
		{
			name: "terminator with bare LF",
			body: "=ybegin size=1 name=a\r\n" + yencPlain("A") + "\n=yend size=1\n.\nX",
			want: "A", consumed: len("=ybegin size=1 name=a\r\n" + yencPlain("A") + "\n=yend size=1\n.\n"), done: true,
		},
		{
			name: "stuffed line that begins with CR is not the terminator",
			body: "=ybegin size=1 name=a\r\n.\rk\r\n=yend size=1\r\n.\r\n",
			want: "A", consumed: -1, done: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(c.body)
			consumed := c.consumed
			if consumed < 0 {
				consumed = len(body)
			}
			want := yencResult{Out: []byte(c.want), Consumed: consumed, Done: c.done, Err: c.err, Verify: c.verify}
			ref := refYencDecode(body)
			ignorePart := cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Part" }, cmp.Ignore())
			if diff := cmp.Diff(want, ref, ignorePart, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("reference (-want +got):\n%s", diff)
			}
			for _, kern := range yencTestKernels() {
				// Every split into two pieces, and byte by byte.
				for cut := 0; cut <= len(body); cut++ {
					got := streamYenc(t, body, []int{cut}, kern)
					if diff := cmp.Diff(ref, got, cmpopts.EquateEmpty()); diff != "" {
						t.Fatalf("kern=%d cut at %d (-ref +got):\n%s", kern, cut, diff)
					}
				}
				cuts := make([]int, len(body))
				for i := range cuts {
					cuts[i] = i
				}
				if diff := cmp.Diff(ref, streamYenc(t, body, cuts, kern), cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("kern=%d byte by byte (-ref +got):\n%s", kern, diff)
				}
			}
			if c.check != nil {
				c.check(t, ref.Part)
			}
		})
	}
}

// yencTestData returns n bytes that exercise the encoder: random bytes with
// runs of the values that need escapes (NUL, LF, CR, "=", TAB, SPACE and "."
// after adding 42).
func yencTestData(rng *rand.Rand, n int) []byte {
	crit := []byte{0 - 42 + 256, '\n' - 42 + 256, '\r' - 42 + 256, '=' - 42, '\t' - 42 + 256, ' ' - 42 + 256, '.' - 42}
	b := make([]byte, n)
	for i := range b {
		if rng.IntN(8) == 0 {
			b[i] = crit[rng.IntN(len(crit))]
		} else {
			b[i] = byte(rng.UintN(256))
		}
	}
	return b
}

func TestYencRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 63, 64, 65, 127, 128, 129, 255, 1000, 5000} {
		for _, line := range []int{1, 2, 3, 63, 64, 127, 128, 129, 997} {
			for _, keepDot := range []bool{false, true} {
				data := yencTestData(rng, n)
				body := YencEncode(nil, data, YencOptions{Name: "f.bin", Line: line, KeepLeadingDot: keepDot, Wire: true})
				for _, kern := range yencTestKernels() {
					cuts := []int{rng.IntN(len(body) + 1), rng.IntN(len(body) + 1)}
					if cuts[0] > cuts[1] {
						cuts[0], cuts[1] = cuts[1], cuts[0]
					}
					got := streamYenc(t, body, cuts, kern)
					if got.Verify != "" || got.Err != "" || !got.Done || got.Consumed != len(body) {
						t.Fatalf("n=%d line=%d keepDot=%v kern=%d: %+v", n, line, keepDot, kern, got)
					}
					if !bytes.Equal(got.Out, data) {
						t.Fatalf("n=%d line=%d keepDot=%v kern=%d: decoded data differs", n, line, keepDot, kern)
					}
				}
				checkYencLines(t, body, line, keepDot)
			}
		}
	}
}

// checkYencLines checks the encoder's output form: line lengths, no bare
// critical bytes, TAB/SPACE never first or last, "." first only as the
// stuffed "..".
func checkYencLines(t *testing.T, body []byte, line int, keepDot bool) {
	t.Helper()
	lines := strings.Split(string(body), "\r\n")
	if lines[len(lines)-1] != "" || lines[len(lines)-2] != "." {
		t.Fatalf("body does not end with .CRLF")
	}
	for _, l := range lines[:len(lines)-2] {
		if strings.HasPrefix(l, "=ybegin ") || strings.HasPrefix(l, "=ypart ") || strings.HasPrefix(l, "=yend ") {
			continue
		}
		if strings.ContainsAny(l, "\x00\r\n") {
			t.Fatalf("line %q holds a critical byte", l)
		}
		if strings.HasPrefix(l, ".") {
			if !keepDot || !strings.HasPrefix(l, "..") {
				t.Fatalf("line %q starts with a dot", l)
			}
			l = l[1:]
		}
		if n := len(l); n > line+1 || n == 0 {
			t.Fatalf("line of %d characters with line=%d", n, line)
		}
		if l[0] == ' ' || l[0] == '\t' || l[len(l)-1] == ' ' || l[len(l)-1] == '\t' {
			t.Fatalf("line %q starts or ends with white space", l)
		}
	}
}

func TestYencMultipartAndCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	file := yencTestData(rng, 100000)
	fileCRC := crc32.ChecksumIEEE(file)
	var combined uint32
	for part, begin := 1, 0; begin < len(file); part++ {
		end := min(begin+38000, len(file))
		body := YencEncode(nil, file[begin:end], YencOptions{Name: "f.bin", Part: part, Total: 3, Begin: int64(begin + 1),
			Size: int64(len(file)), HasFileCRC: true, FileCRC: fileCRC, Wire: true})
		var d YencDecoder
		out := make([]byte, 0, end-begin) // exactly the part's region
		out, n, err := d.Feed(out, body)
		if err != nil || n != len(body) || !d.Done() {
			t.Fatalf("part %d: n=%d/%d err=%v done=%v", part, n, len(body), err, d.Done())
		}
		if err := d.Verify(); err != nil {
			t.Fatalf("part %d: %v", part, err)
		}
		p := d.Part()
		if p.Offset() != int64(begin) || !bytes.Equal(out, file[begin:end]) || p.CRC32 != fileCRC {
			t.Fatalf("part %d: offset %d, data equal %v", part, p.Offset(), bytes.Equal(out, file[begin:end]))
		}
		combined = CRC32Combine(combined, p.PCRC32, p.PartSize())
		begin = end
	}
	if combined != fileCRC {
		t.Errorf("combined part CRCs %08x, file CRC %08x", combined, fileCRC)
	}
}

// TestYencShortDst decodes into a small buffer that the caller drains, as
// newsget does when it writes through a fixed window.
func TestYencShortDst(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	data := yencTestData(rng, 20000)
	body := YencEncode(nil, data, YencOptions{Name: "f", Wire: true})
	body = append(body, "200 next\r\n"...)
	for _, room := range []int{1, 7, 64, 100, 1000} {
		for _, kern := range yencTestKernels() {
			var d YencDecoder
			d.kern = kern
			var got []byte
			buf := make([]byte, 0, room)
			pos := 0
			for !d.Done() {
				out, n, err := d.Feed(buf[:0], body[pos:])
				if err != nil {
					t.Fatal(err)
				}
				if len(out) > room {
					t.Fatalf("wrote %d bytes into room %d", len(out), room)
				}
				got = append(got, out...)
				pos += n
			}
			if err := d.Verify(); err != nil || !bytes.Equal(got, data) || string(body[pos:]) != "200 next\r\n" {
				t.Fatalf("room %d kern %d: err %v, equal %v, rest %q", room, kern, err, bytes.Equal(got, data), body[pos:])
			}
		}
	}
}

func TestYencInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	data := yencTestData(rng, 50000)
	body := YencEncode(nil, data, YencOptions{Name: "f", KeepLeadingDot: true, Wire: true})
	for _, kern := range yencTestKernels() {
		buf := bytes.Clone(body)
		var d YencDecoder
		d.kern = kern
		var out []byte
		// Two calls, so that the second starts with state from the first.
		out, n, err := d.Feed(buf[:0], buf[:len(buf)/2])
		if err != nil || n != len(buf)/2 {
			t.Fatal(n, err)
		}
		out, _, err = d.Feed(out, buf[len(buf)/2:])
		if err != nil || d.Verify() != nil || !bytes.Equal(out, data) {
			t.Fatalf("kern %d: in-place decode differs (err %v, verify %v)", kern, err, d.Verify())
		}
	}
}

// TestYencGuard gives the decoder exactly the part's region of a larger
// buffer and checks nothing around it changes, for well-formed and
// over-long parts.
func TestYencGuard(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	data := yencTestData(rng, 3000)
	good := YencEncode(nil, data, YencOptions{Name: "f", Wire: true})
	// A part that declares 1000 bytes but carries 3000.
	long := bytes.Replace(good, []byte("size=3000"), []byte("size=1000"), 1)
	for _, tc := range []struct {
		body []byte
		size int
		err  error
	}{{good, 3000, nil}, {long, 1000, ErrYencOverflow}} {
		for _, kern := range yencTestKernels() {
			guard := make([]byte, tc.size+256)
			for i := range guard {
				guard[i] = 0xa5
			}
			dst := guard[128 : 128 : 128+tc.size]
			var d YencDecoder
			d.kern = kern
			pos := 0
			var firstErr error
			for !d.Done() {
				out, n, err := d.Feed(dst, tc.body[pos:])
				if err != nil && firstErr == nil {
					firstErr = err
				}
				dst = out
				pos += n
			}
			if !errors.Is(firstErr, tc.err) || (tc.err == nil && firstErr != nil) {
				t.Fatalf("error %v, want %v", firstErr, tc.err)
			}
			for i, c := range guard {
				if (i < 128 || i >= 128+tc.size) && c != 0xa5 {
					t.Fatalf("kern %d: guard byte %d changed", kern, i)
				}
			}
			if !bytes.Equal(dst, data[:tc.size]) {
				t.Fatalf("kern %d: region holds wrong data", kern)
			}
		}
	}
}

func TestCRC32Combine(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range [][2]int{{0, 0}, {0, 5}, {5, 0}, {1, 1}, {3, 1000}, {1000, 3}, {4096, 65536}, {100, 700 << 10}} {
		a, b := yencTestData(rng, n[0]), yencTestData(rng, n[1])
		want := crc32.ChecksumIEEE(append(bytes.Clone(a), b...))
		got := CRC32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b)))
		if got != want {
			t.Errorf("lengths %v: combine %08x, checksum of concatenation %08x", n, got, want)
		}
	}
	// Lengths beyond anything in memory: shifting by 2^39 bytes twice must
	// equal shifting by 2^40 at once (crc2 = 0 makes Combine a pure shift).
	z := crc32.ChecksumIEEE(nil)
	half := CRC32Combine(CRC32Combine(0x12345678, z, 1<<39), z, 1<<39)
	if whole := CRC32Combine(0x12345678, z, 1<<40); half != whole {
		t.Errorf("2^40 in halves %08x, at once %08x", half, whole)
	}
}

// TestYencKernel checks where each SIMD kernel stops: it takes plain
// blocks (64 bytes for AVX-512, 32 for AVX2) and declines the first block
// that needs the scalar code.
func TestYencKernel(t *testing.T) {
	plain := strings.Repeat("k", 62) + "\r\n" // a full line per 64 bytes
	type res struct {
		N, W    int
		Esc, LS bool
	}
	for _, tc := range []struct {
		name string
		src  string
		room int
		esc  bool
		want res  // AVX-512
		avx2 *res // AVX2, if different
	}{
		{"plain lines", plain + plain + "xx", 200, false, res{128, 124, false, true}, nil},
		{"escapes", strings.Repeat("=}k", 21) + "k" + plain, 200, false, res{128, 43 + 62, false, true}, nil},
		{"pending escape carried in", "}" + strings.Repeat("k", 63) + plain, 200, true, res{128, 64 + 62, false, true}, nil},
		{"pending escape across blocks", strings.Repeat("k", 63) + "=" + "}" + strings.Repeat("k", 63), 200, false, res{128, 127, false, false}, nil},
		{"pending escape out", strings.Repeat("k", 63) + "=", 200, false, res{64, 63, true, false}, nil},
		{"dot at line start", plain + "..k" + strings.Repeat("k", 61), 200, false, res{64, 62, false, true}, nil},
		{"=y at line start", plain + "=ybegin" + strings.Repeat("k", 57), 200, false, res{64, 62, false, true}, nil},
		{"= at line start without y is an escape", plain + "=}" + strings.Repeat("k", 62), 200, false, res{128, 62 + 63, false, false}, nil},
		{"= after LF at the end of a block", strings.Repeat("k", 62) + "\n=" + "}" + strings.Repeat("k", 63), 200, false, res{0, 0, false, false}, &res{32, 32, false, false}},
		{"==", "k==}" + strings.Repeat("k", 60), 200, false, res{0, 0, false, false}, nil},
		{"escape before CRLF", strings.Repeat("k", 61) + "=\r\n", 200, false, res{0, 0, false, false}, &res{32, 32, false, false}},
		{"no room for the block", plain + plain, 100, false, res{64, 62, false, true}, &res{96, 94, false, false}},
		{"short input", strings.Repeat("k", 63), 200, false, res{0, 0, false, false}, &res{32, 32, false, false}},
	} {
		for _, kern := range yencTestKernels()[1:] {
			t.Run(fmt.Sprintf("%s/kern%d", tc.name, kern), func(t *testing.T) {
				dst := make([]byte, tc.room)
				n, w, esc, ls := yencKernel(kern, dst, []byte(tc.src), tc.esc)
				want := tc.want
				if kern == kernAVX2 && tc.avx2 != nil {
					want = *tc.avx2
				}
				if diff := cmp.Diff(want, res{n, w, esc, ls}); diff != "" {
					t.Fatalf("(-want +got):\n%s", diff)
				}
				// What it wrote is what the scalar loop makes of the same
				// bytes (plain blocks hold no line-start cases).
				ref := make([]byte, n)
				o, i, e := 0, 0, tc.esc
				for i < n {
					o, i, e, _, _ = yencDataScalar(ref, o, len(ref), []byte(tc.src), i, n, e)
				}
				if !bytes.Equal(dst[:w], ref[:o]) {
					t.Errorf("kernel wrote %q, scalar %q", dst[:w], ref[:o])
				}
			})
		}
	}
}

// TestYencSabyencVectors decodes bodies encoded by sabyenc (an independent
// SIMD codec; testdata/yenc/gen.py made them) and checks that YencEncode
// produces the same data lines for the same data.
func TestYencSabyencVectors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts YencOptions
	}{
		{"single", YencOptions{Name: "sab single.bin", Wire: true}},
		{"allbytes", YencOptions{Name: "all bytes.dat", Wire: true}},
		{"multi2", YencOptions{Name: "whole.bin", Part: 2, Total: 3, Begin: 2001, Size: 6000, Wire: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wire, err := os.ReadFile(filepath.Join("testdata", "yenc", tc.name+".wire"))
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join("testdata", "yenc", tc.name+".bin"))
			if err != nil {
				t.Fatal(err)
			}
			for _, kern := range yencTestKernels() {
				got := streamYenc(t, wire, []int{len(wire) / 3}, kern)
				if got.Err != "" || got.Verify != "" || !got.Done || got.Consumed != len(wire) || !bytes.Equal(got.Out, data) {
					t.Fatalf("kern %d: err %q verify %q done %v consumed %d/%d, data equal %v",
						kern, got.Err, got.Verify, got.Done, got.Consumed, len(wire), bytes.Equal(got.Out, data))
				}
			}
			// Same data lines as sabyenc: compare everything between the
			// header lines and =yend.
			dataLines := func(b []byte) string {
				s := string(b)
				s = s[strings.LastIndex(s[:strings.Index(s, "\r\n=yend")], "=ybegin"):]
				lines := strings.Split(s, "\r\n")
				var keep []string
				for _, l := range lines {
					if !strings.HasPrefix(l, "=ybegin") && !strings.HasPrefix(l, "=ypart") && !strings.HasPrefix(l, "=yend") && l != "." {
						keep = append(keep, l)
					}
				}
				return strings.Join(keep, "\r\n")
			}
			ours := YencEncode(nil, data, tc.opts)
			if len(dataLines(wire)) < len(data) {
				t.Fatalf("found only %d bytes of data lines in the vector", len(dataLines(wire)))
			}
			if diff := cmp.Diff(dataLines(wire), dataLines(ours)); diff != "" {
				t.Errorf("data lines differ from sabyenc's (-sabyenc +ours):\n%s", diff)
			}
		})
	}
}

// TestYencPipelined decodes two bodies that arrive in one buffer, as
// pipelined BODY responses do: consumed marks where the second starts, and
// Reset readies the decoder for it.
func TestYencPipelined(t *testing.T) {
	a, b := []byte("first part"), []byte("second part, longer")
	wire := YencEncode(nil, a, YencOptions{Name: "a", Part: 1, Total: 2, Size: int64(len(a) + len(b)), Wire: true})
	wire = append(wire, "222 0 <b@x>\r\n"...)
	wire = YencEncode(wire, b, YencOptions{Name: "a", Part: 2, Total: 2, Begin: int64(len(a) + 1), Size: int64(len(a) + len(b)), Wire: true})
	for _, kern := range yencTestKernels() {
		var d YencDecoder
		d.kern = kern
		out, n, err := d.Feed(nil, wire) // no room: only headers can be read
		if err != nil || len(out) != 0 || d.Done() {
			t.Fatalf("kern %d: with no room: n=%d err=%v done=%v", kern, n, err, d.Done())
		}
		out, n2, err := d.Feed(make([]byte, 0, 64), wire[n:])
		n += n2
		if err != nil || !d.Done() || d.Verify() != nil || string(out) != string(a) {
			t.Fatalf("kern %d: first body: %q err=%v verify=%v", kern, out, err, d.Verify())
		}
		rest := wire[n:]
		if !bytes.HasPrefix(rest, []byte("222 0 <b@x>\r\n")) {
			t.Fatalf("kern %d: first body consumed %d bytes, rest starts %q", kern, n, rest[:min(20, len(rest))])
		}
		d.Reset()
		out, n, err = d.Feed(make([]byte, 0, 64), rest[len("222 0 <b@x>\r\n"):])
		if err != nil || !d.Done() || d.Verify() != nil || string(out) != string(b) || d.Part().Offset() != int64(len(a)) {
			t.Fatalf("kern %d: second body: %q err=%v verify=%v", kern, out, err, d.Verify())
		}
	}
}

// TestYencNoGarbagePastOutput: a SIMD block whose last two 8-byte groups
// keep few bytes (escapes, a line end) and is the last data of a part that
// comes up short leaves every byte of the part's region after the decoded
// output as it was. The AVX2 kernel stores groups 8 bytes wide; its last
// store must put back what was there, not the excess of the group before
// (a fuzz finding in CI).
func TestYencNoGarbagePastOutput(t *testing.T) {
	data := "AAAAAAAAAAAAAAAA" + "=A=A=A=A" + "=A=A\r\n\r\n" // 16 + 4 + 2 kept bytes
	for _, lead := range []string{"", "B", "BBBBBBB", strings.Repeat("B", 31)} {
		got := len(lead) + 22
		size := got + 40 // declared: the part is short by 40 bytes
		body := "=ybegin line=128 size=" + strconv.Itoa(size) + " name=f\r\n" + lead + data +
			"=yend size=" + strconv.Itoa(size) + "\r\n" + strings.Repeat("x", 70) + "\r\n.\r\n"
		for _, kern := range yencTestKernels() {
			const pad = 16
			guard := bytes.Repeat([]byte{0x5a}, size+2*pad)
			dst := guard[pad : pad : pad+size]
			var d YencDecoder
			d.kern = kern
			for pos := 0; pos < len(body) && !d.Done(); {
				out, n, _ := d.Feed(dst, []byte(body[pos:]))
				dst, pos = out, pos+n
			}
			if len(dst) != got {
				t.Fatalf("lead %d kern %d: decoded %d bytes, want %d", len(lead), kern, len(dst), got)
			}
			for i := pad + got; i < len(guard); i++ {
				if guard[i] != 0x5a {
					t.Fatalf("lead %d kern %d: byte %d past the output was written (%#x)", len(lead), kern, i-pad, guard[i])
				}
			}
		}
	}
}
