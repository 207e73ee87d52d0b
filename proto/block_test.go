package proto

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// blockResult is what one run of a decoder over a whole input produced.
type blockResult struct {
	Out     string
	N       int  // input bytes consumed, over all calls
	Done    bool // terminator seen
	TooLong bool // stopped by a line over the limit
}

// refBlockDecode is the obviously-correct reference decoder the fast one must
// agree with: it cuts src into lines (each up to and including its LF, the
// last one possibly without) and treats each on its own.
func refBlockDecode(src []byte, maxLine int) blockResult {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	var out []byte
	n := 0
	for n < len(src) {
		line := src[n:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		if len(line) > maxLine {
			// The first maxLine octets are output and consumed.
			out = append(out, refBlockPartial(line[:maxLine])...)
			return blockResult{Out: string(out), N: n + maxLine, TooLong: true}
		}
		if line[len(line)-1] != '\n' {
			// Input ends inside this line: output what is known.
			out = append(out, refBlockPartial(line)...)
			return blockResult{Out: string(out), N: len(src)}
		}
		if s := string(line); s == ".\r\n" || s == ".\n" {
			return blockResult{Out: string(out), N: n + len(line), Done: true}
		}
		out = append(out, bytes.TrimPrefix(line, []byte("."))...)
		n += len(line)
	}
	return blockResult{Out: string(out), N: n}
}

// refBlockPartial is the output of a line known only in part (no LF yet): nothing
// while it may still be the terminator, else the line less a leading dot.
func refBlockPartial(line []byte) []byte {
	if s := string(line); s == "." || s == ".\r" {
		return nil
	}
	return bytes.TrimPrefix(line, []byte("."))
}

// pieces cuts src at the given offsets (ascending, in range).
func blockSplitAt(src []byte, cuts ...int) [][]byte {
	var ps [][]byte
	prev := 0
	for _, c := range cuts {
		ps = append(ps, src[prev:c])
		prev = c
	}
	return append(ps, src[prev:])
}

// blockBytes cuts src into 1-byte pieces.
func blockBytes(src []byte) [][]byte {
	ps := make([][]byte, len(src))
	for i := range src {
		ps[i] = src[i : i+1]
	}
	return ps
}

// blockDecodePieces runs Decode over the pieces in order, as a caller reading a
// socket would, stopping at the terminator or an error.
func blockDecodePieces(t testing.TB, maxLine int, ps [][]byte) blockResult {
	d := NewBlockDecoder(maxLine)
	var got blockResult
	var out []byte
	for _, p := range ps {
		var n int
		var done bool
		var err error
		before := len(out)
		out, n, done, err = d.Decode(out, p)
		if len(out)-before > len(p)+1 {
			t.Fatalf("Decode(%q) grew output by %d, more than len(src)+1", p, len(out)-before)
		}
		got.N += n
		if err != nil {
			if !errors.Is(err, ErrLineTooLong) {
				t.Fatalf("Decode: unexpected error %v", err)
			}
			got.TooLong = true
			break
		}
		if done != d.Done() {
			t.Fatalf("Decode returned done=%v but Done()=%v", done, d.Done())
		}
		if done {
			got.Done = true
			break
		}
		if n != len(p) {
			t.Fatalf("Decode(%q) consumed %d of %d bytes without finishing", p, n, len(p))
		}
	}
	got.Out = string(out)
	return got
}

// blockDecodePiecesInPlace runs DecodeInPlace as a buffer-owning caller would:
// unconsumed bytes stay at the front of its buffer and the next piece is
// read in after them.
func blockDecodePiecesInPlace(t testing.TB, maxLine int, ps [][]byte) blockResult {
	d := NewBlockDecoder(maxLine)
	var got blockResult
	var out, buf []byte
	for _, p := range ps {
		buf = append(buf, p...)
		m, n, done, err := d.DecodeInPlace(buf)
		if m > n {
			t.Fatalf("DecodeInPlace(%q): output %d longer than input consumed %d", buf, m, n)
		}
		out = append(out, buf[:m]...)
		got.N += n
		if err != nil {
			if !errors.Is(err, ErrLineTooLong) {
				t.Fatalf("DecodeInPlace: unexpected error %v", err)
			}
			got.TooLong = true
			break
		}
		if done {
			got.Done = true
			break
		}
		if len(buf)-n > 2 {
			t.Fatalf("DecodeInPlace(%q) left %d bytes unconsumed", buf, len(buf)-n)
		}
		buf = append(buf[:0], buf[n:]...)
	}
	if !got.Done && !got.TooLong {
		// Bytes the caller still holds are not consumed yet; at the end of
		// input they are a pending "." or ".\r", which Decode consumes.
		got.N += len(buf)
	}
	got.Out = string(out)
	return got
}

// blockPiecesReader returns the pieces one per Read, like a socket.
type blockPiecesReader struct{ ps [][]byte }

func (r *blockPiecesReader) Read(p []byte) (int, error) {
	for len(r.ps) > 0 && len(r.ps[0]) == 0 {
		r.ps = r.ps[1:]
	}
	if len(r.ps) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.ps[0])
	r.ps[0] = r.ps[0][n:]
	return n, nil
}

// blockReadAll reads the block through a BlockReader over a bufio.Reader fed
// with the pieces, using reads of readSize bytes; consumed is what the
// bufio.Reader no longer holds.
func blockReadAll(t testing.TB, maxLine, readSize int, src []byte, ps [][]byte) blockResult {
	br := bufio.NewReaderSize(&blockPiecesReader{ps: ps}, 16)
	r := NewBlockReader(br, maxLine)
	var got blockResult
	var out []byte
	buf := make([]byte, readSize)
	var err error
	for i := 0; ; i++ {
		if i > 4*len(src)+10 {
			t.Fatalf("BlockReader made no progress")
		}
		var n int
		n, err = r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			break
		}
	}
	rest, rerr := io.ReadAll(br)
	if rerr != nil {
		t.Fatal(rerr)
	}
	switch {
	case err == io.EOF:
		got.Done = true
		// Nothing past the terminator may be consumed.
		got.N = len(src) - len(rest)
	case errors.Is(err, ErrLineTooLong):
		got.TooLong = true
		got.N = len(src) - len(rest)
	case errors.Is(err, io.ErrUnexpectedEOF):
		got.N = len(src)
	default:
		t.Fatalf("BlockReader: unexpected error %v", err)
	}
	if r.Reader() != br {
		t.Fatalf("BlockReader.Reader is not the bufio.Reader it was given")
	}
	got.Out = string(out)
	return got
}

// blockCheckAllWays decodes src whole, split at every index, in 1-byte pieces, in
// place, and through BlockReader, and reports any difference from want.
func blockCheckAllWays(t *testing.T, src []byte, maxLine int, want blockResult) {
	t.Helper()
	check := func(how string, got blockResult) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: (-want +got)\n%s", how, diff)
		}
	}
	check("whole", blockDecodePieces(t, maxLine, blockSplitAt(src)))
	check("1-byte pieces", blockDecodePieces(t, maxLine, blockBytes(src)))
	check("in place, 1-byte pieces", blockDecodePiecesInPlace(t, maxLine, blockBytes(src)))
	for i := 0; i <= len(src); i++ {
		check(fmt.Sprintf("split at %d", i), blockDecodePieces(t, maxLine, blockSplitAt(src, i)))
		check(fmt.Sprintf("in place, split at %d", i), blockDecodePiecesInPlace(t, maxLine, blockSplitAt(src, i)))
	}
	for _, size := range []int{1, 2, 3, 4096} {
		check(fmt.Sprintf("BlockReader, %d-byte reads", size), blockReadAll(t, maxLine, size, src, blockSplitAt(src)))
		check(fmt.Sprintf("BlockReader, %d-byte reads, 1-byte pieces", size), blockReadAll(t, maxLine, size, src, blockBytes(src)))
	}
}

var blockDecodeTests = []struct {
	name    string
	in      string
	maxLine int // 0: DefaultMaxLine
	want    blockResult
}{
	{"empty block", ".\r\n", 0, blockResult{N: 3, Done: true}},
	{"empty block, bare LF terminator", ".\n", 0, blockResult{N: 2, Done: true}},
	{"two lines", "a\r\nb\r\n.\r\n", 0, blockResult{Out: "a\r\nb\r\n", N: 9, Done: true}},
	{"stuffed dots", "..a\r\n..\r\n...\r\nb.\r\n.\r\n", 0,
		blockResult{Out: ".a\r\n.\r\n..\r\nb.\r\n", N: 21, Done: true}},
	{"stuffed dot line with bare LF", "..\nx\n.\n", 0, blockResult{Out: ".\nx\n", N: 7, Done: true}},
	{"tolerated: unstuffed leading dot dropped", ".x\r\n. y\r\n.\r\n", 0,
		blockResult{Out: "x\r\n y\r\n", N: 12, Done: true}},
	{"bare LF lines keep their ending", "a\nb\r\n\n.\r\n", 0, blockResult{Out: "a\nb\r\n\n", N: 9, Done: true}},
	{"dot line with bare LF mid-block ends the block", "a\n.\nb\r\n.\r\n", 0,
		blockResult{Out: "a\n", N: 4, Done: true}},
	{"CR without LF inside lines", "a\rb\r\n\r\r\n.\rx\r\n.\r\r\n\r.\r\n.\r\n", 0,
		blockResult{Out: "a\rb\r\n\r\r\n\rx\r\n\r\r\n\r.\r\n", N: 24, Done: true}},
	{"dot CR dot", ".\r.\r\n.\r\n", 0, blockResult{Out: "\r.\r\n", N: 8, Done: true}},
	{"pipelined response after the terminator", "body\r\n.\r\n223 0 <a@b> ok\r\n", 0,
		blockResult{Out: "body\r\n", N: 9, Done: true}},
	{"pipelined block after the terminator", "x\r\n.\r\n..y\r\n.\r\n", 0,
		blockResult{Out: "x\r\n", N: 6, Done: true}},
	{"binary bytes and NUL", "\x00\xff\x80.\r\n\t.\r\n.\r\n", 0,
		blockResult{Out: "\x00\xff\x80.\r\n\t.\r\n", N: 13, Done: true}},
	{"unterminated: partial line", "abc\r\nde", 0, blockResult{Out: "abc\r\nde", N: 7}},
	{"unterminated: pending dot", "abc\r\n.", 0, blockResult{Out: "abc\r\n", N: 6}},
	{"unterminated: pending dot CR", "abc\r\n.\r", 0, blockResult{Out: "abc\r\n", N: 7}},
	{"unterminated: no line ending at all", "abc", 0, blockResult{Out: "abc", N: 3}},
	{"line exactly at the limit", "123456\r\n..3456\r\n.\r\n", 8,
		blockResult{Out: "123456\r\n.3456\r\n", N: 19, Done: true}},
	{"line one over the limit", "123456\r\n1234567\r\n.\r\n", 8,
		blockResult{Out: "123456\r\n1234567\r", N: 16, TooLong: true}},
	{"dot counts towards the limit", "..34567\r\n.\r\n", 8, blockResult{Out: ".34567\r", N: 8, TooLong: true}},
	{"bare LF line one over the limit", "1234567\n12345678\n", 8, blockResult{Out: "1234567\n12345678", N: 16, TooLong: true}},
	{"unterminated long line", "123456789", 8, blockResult{Out: "12345678", N: 8, TooLong: true}},
	{"terminator over a tiny limit", ".\r\n", 2, blockResult{N: 2, TooLong: true}},
	{"limit of one", ".\n", 1, blockResult{N: 1, TooLong: true}},
	// ".\r0" with a limit of 2 must not emit the held-back CR before
	// failing on the '0': over the limit, ".\r" is still a partial line
	// that may be the terminator, so nothing is output.
	{"fuzz: dot CR then a byte over the limit", ".\r0", 2, blockResult{N: 2, TooLong: true}},
	{"article body", "Hi,\r\n\r\n..signature follows\r\n-- \r\n.\r\nsig\r\n.\r\n", 0,
		blockResult{Out: "Hi,\r\n\r\n.signature follows\r\n-- \r\n", N: 36, Done: true}},
	{"yEnc-ish lines", "=ybegin line=128 size=6 name=a\r\n..*+,-\r\n.=J\r\n=yend size=6\r\n.\r\n", 0,
		blockResult{Out: "=ybegin line=128 size=6 name=a\r\n.*+,-\r\n=J\r\n=yend size=6\r\n", N: 62, Done: true}},
}

// blockAVX2Available is whether this machine runs the assembly search.
var blockAVX2Available = blockHaveAVX2

// blockEachKernel runs f with the portable "\n." search and, where the
// machine has it, with the AVX2 one.
func blockEachKernel(t *testing.T, f func(t *testing.T)) {
	kernels := []string{"portable"}
	if blockAVX2Available {
		kernels = append(kernels, "avx2")
	}
	for _, k := range kernels {
		t.Run(k, func(t *testing.T) {
			blockHaveAVX2 = k == "avx2"
			defer func() { blockHaveAVX2 = blockAVX2Available }()
			f(t)
		})
	}
}

func TestBlockIndexNLDot(t *testing.T) {
	// Every length up to a few AVX2 rounds, every alignment, the pair at
	// every position (or none), over backgrounds of near misses.
	backgrounds := []struct {
		name string
		fill func(i int) byte
	}{
		{"letters", func(i int) byte { return 'a' + byte(i%26) }},
		{"all LF", func(int) byte { return '\n' }},
		{"all dots", func(int) byte { return '.' }},
		{"dot LF", func(i int) byte { return ".\n"[i%2] }},
	}
	buf := make([]byte, 8+200)
	for _, bg := range backgrounds {
		for off := range 8 {
			for n := 0; n <= 200; n++ {
				s := buf[off : off+n]
				for k := -1; k < n-1; k++ {
					for i := range s {
						s[i] = bg.fill(i)
					}
					if k >= 0 {
						s[k], s[k+1] = '\n', '.'
					}
					want := bytes.Index(s, []byte("\n."))
					if got := blockIndexNLDotSWAR(s); got != want {
						t.Fatalf("%s, offset %d, len %d, pair at %d: portable search = %d, want %d", bg.name, off, n, k, got, want)
					}
					if blockAVX2Available {
						if got := blockIndexNLDot(s); got != want {
							t.Fatalf("%s, offset %d, len %d, pair at %d: AVX2 search = %d, want %d", bg.name, off, n, k, got, want)
						}
					}
				}
			}
		}
	}
}

func TestBlockDecode(t *testing.T) {
	blockEachKernel(t, func(t *testing.T) {
		for _, tc := range blockDecodeTests {
			t.Run(tc.name, func(t *testing.T) {
				// The table agrees with the reference, and so do all the ways.
				if diff := cmp.Diff(tc.want, refBlockDecode([]byte(tc.in), tc.maxLine)); diff != "" {
					t.Fatalf("reference disagrees with the table: (-want +got)\n%s", diff)
				}
				blockCheckAllWays(t, []byte(tc.in), tc.maxLine, tc.want)
			})
		}
	})
}

func TestBlockDecodeDotLineAtEveryOffset(t *testing.T) {
	// A stuffed dot line and the terminator at every position across
	// several 64-octet search rounds.
	blockEachKernel(t, func(t *testing.T) {
		for k := 0; k < 200; k++ {
			src := []byte(strings.Repeat("a", k) + "\r\n..b\r\n.\r\n220 next")
			want := blockResult{Out: strings.Repeat("a", k) + "\r\n.b\r\n", N: len(src) - len("220 next"), Done: true}
			check := func(how string, got blockResult) {
				t.Helper()
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("%d octets before the dot line, %s: (-want +got)\n%s", k, how, diff)
				}
			}
			check("whole", blockDecodePieces(t, 0, blockSplitAt(src)))
			check("in place", blockDecodePiecesInPlace(t, 0, blockSplitAt(src)))
			check("split in the middle", blockDecodePieces(t, 0, blockSplitAt(src, len(src)/2)))
			check("limit of the longest line", blockDecodePieces(t, max(k+2, 5), blockSplitAt(src)))
		}
	})
}

func TestBlockDecodeLongInput(t *testing.T) {
	blockEachKernel(t, testBlockDecodeLongInput)
}

func testBlockDecodeLongInput(t *testing.T) {
	// Many lines, some dotted, some too close to the limit, every split.
	var b strings.Builder
	for i := range 60 {
		switch i % 7 {
		case 0:
			b.WriteString("..dot line\r\n")
		case 3:
			b.WriteString(strings.Repeat("x", i) + "\n")
		case 5:
			b.WriteString(".\rnot the end\r\n")
		default:
			fmt.Fprintf(&b, "line %d with text\r\n", i)
		}
	}
	b.WriteString(".\r\nnext")
	src := []byte(b.String())
	for _, maxLine := range []int{0, 30, 60, 61, 62} {
		t.Run(fmt.Sprint(maxLine), func(t *testing.T) {
			blockCheckAllWays(t, src, maxLine, refBlockDecode(src, maxLine))
		})
	}
}

func TestBlockDecodeErrorMessage(t *testing.T) {
	d := NewBlockDecoder(8)
	_, _, _, err := d.Decode(nil, []byte("123456789\r\n.\r\n"))
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("error %v does not wrap ErrLineTooLong", err)
	}
	want := "nntp: block line longer than 8 octets: nntp: line too long"
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Fatalf("error message (-want +got)\n%s", diff)
	}
	// Sticky: nothing more is consumed until Reset.
	out, n, done, err2 := d.Decode(nil, []byte(".\r\n"))
	if diff := cmp.Diff([]any{"", 0, false, err.Error()}, []any{string(out), n, done, fmt.Sprint(err2)}); diff != "" {
		t.Fatalf("Decode after the error (-want +got)\n%s", diff)
	}
	d.Reset()
	out, n, done, err = d.Decode(nil, []byte("ok\r\n.\r\n"))
	if diff := cmp.Diff([]any{"ok\r\n", 7, true, "<nil>"}, []any{string(out), n, done, fmt.Sprint(err)}); diff != "" {
		t.Fatalf("Decode after Reset (-want +got)\n%s", diff)
	}
}

func TestBlockDecodeDefaultLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lineLen int
		tooLong bool
	}{
		{"at DefaultMaxLine", DefaultMaxLine, false},
		{"one over DefaultMaxLine", DefaultMaxLine + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := append(bytes.Repeat([]byte("y"), tc.lineLen-2), "\r\n.\r\n"...)
			_, _, done, err := NewBlockDecoder(0).Decode(nil, src)
			if got := errors.Is(err, ErrLineTooLong); got != tc.tooLong || done == tc.tooLong {
				t.Fatalf("line of %d octets: done=%v err=%v", tc.lineLen, done, err)
			}
		})
	}
}

func TestBlockDecodeAfterDone(t *testing.T) {
	d := NewBlockDecoder(0)
	out, n, done, err := d.Decode(nil, []byte("a\r\n.\r\nb\r\n"))
	if diff := cmp.Diff([]any{"a\r\n", 6, true, "<nil>"}, []any{string(out), n, done, fmt.Sprint(err)}); diff != "" {
		t.Fatalf("first block (-want +got)\n%s", diff)
	}
	out, n, done, err = d.Decode(out, []byte("b\r\n.\r\n"))
	if diff := cmp.Diff([]any{"a\r\n", 0, true, "<nil>"}, []any{string(out), n, done, fmt.Sprint(err)}); diff != "" {
		t.Fatalf("Decode once done must consume nothing (-want +got)\n%s", diff)
	}
	d.Reset()
	out, n, done, err = d.Decode(nil, []byte("b\r\n.\r\n"))
	if diff := cmp.Diff([]any{"b\r\n", 6, true, "<nil>"}, []any{string(out), n, done, fmt.Sprint(err)}); diff != "" {
		t.Fatalf("next block after Reset (-want +got)\n%s", diff)
	}
}

func TestBlockDecodeInPlaceLeavesRest(t *testing.T) {
	buf := []byte("..a\r\nb\r\n.\r\n211 pipelined\r\n")
	m, n, done, err := NewBlockDecoder(0).DecodeInPlace(buf)
	got := []any{string(buf[:m]), string(buf[n:]), done, fmt.Sprint(err)}
	if diff := cmp.Diff([]any{".a\r\nb\r\n", "211 pipelined\r\n", true, "<nil>"}, got); diff != "" {
		t.Fatalf("(-want +got)\n%s", diff)
	}
}

func TestBlockDecodeInPlaceAfterDecodePending(t *testing.T) {
	d := NewBlockDecoder(0)
	if _, _, _, err := d.Decode(nil, []byte("a\r\n.\r")); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := d.DecodeInPlace([]byte("x\r\n")); err == nil {
		t.Fatalf("DecodeInPlace after Decode left \".\\r\" pending: want an error, got none")
	}
}

var blockEncodeTests = []struct {
	name string
	in   string
	want string
}{
	{"empty", "", ".\r\n"},
	{"one line", "abc\r\n", "abc\r\n.\r\n"},
	{"no final line ending", "abc", "abc\r\n.\r\n"},
	{"final CR only", "abc\r", "abc\r\r\n.\r\n"},
	{"leading dot", ".a\r\n", "..a\r\n.\r\n"},
	{"lone dot", ".", "..\r\n.\r\n"},
	{"dot line", "a\r\n.\r\nb\r\n", "a\r\n..\r\nb\r\n.\r\n"},
	{"dot line with bare LF", "a\n.\nb", "a\n..\nb\r\n.\r\n"},
	{"dots not at line start", "a.b\r\n x.\r\n", "a.b\r\n x.\r\n.\r\n"},
	{"many dots", "..\n...\n.", "...\n....\n..\r\n.\r\n"},
	{"CR then dot", "\r.\r\n", "\r.\r\n.\r\n"},
	{"empty lines", "\r\n\n", "\r\n\n.\r\n"},
}

func TestBlockEncode(t *testing.T) {
	blockEachKernel(t, testBlockEncode)
}

func testBlockEncode(t *testing.T) {
	for _, tc := range blockEncodeTests {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			check := func(how, got string) {
				t.Helper()
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Fatalf("%s: (-want +got)\n%s", how, diff)
				}
			}
			check("AppendBlock", string(AppendBlock(nil, in)))
			check("AppendBlock after a prefix", strings.TrimPrefix(string(AppendBlock([]byte("222 0 <a@b>\r\n"), in)), "222 0 <a@b>\r\n"))
			check("1-byte Appends", blockEncodePieces(blockBytes(in)))
			check("BlockWriter, 1-byte writes", blockWriteAll(t, blockBytes(in)))
			for i := 0; i <= len(in); i++ {
				check(fmt.Sprintf("Append split at %d", i), blockEncodePieces(blockSplitAt(in, i)))
				check(fmt.Sprintf("BlockWriter split at %d", i), blockWriteAll(t, blockSplitAt(in, i)))
			}
			blockCheckRoundTrip(t, in, []byte(tc.want))
		})
	}
}

// blockEncodePieces encodes the pieces with one BlockEncoder.
func blockEncodePieces(ps [][]byte) string {
	var e BlockEncoder
	var out []byte
	for _, p := range ps {
		out = e.Append(out, p)
	}
	return string(e.Close(out))
}

// blockWriteAll encodes the pieces through a BlockWriter.
func blockWriteAll(t testing.TB, ps [][]byte) string {
	var b bytes.Buffer
	w := NewBlockWriter(&b)
	for _, p := range ps {
		if n, err := w.Write(p); n != len(p) || err != nil {
			t.Fatalf("BlockWriter.Write(%q) = %d, %v", p, n, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// blockCheckRoundTrip asserts the round trip property stated on BlockEncoder for
// payload x and its encoding enc: decoding enc, followed by pipelined bytes,
// with a limit of its longest line, gives x (plus "\r\n" when x is non-empty
// and does not end in LF) and consumes exactly enc.
func blockCheckRoundTrip(t testing.TB, x, enc []byte) {
	t.Helper()
	want := string(x)
	if len(x) > 0 && x[len(x)-1] != '\n' {
		want += "\r\n"
	}
	maxLine := 0
	for _, l := range bytes.SplitAfter(enc, []byte("\n")) {
		maxLine = max(maxLine, len(l))
	}
	src := append(append([]byte(nil), enc...), "200 next\r\n"...)
	got := blockDecodePieces(t, maxLine, blockSplitAt(src))
	if diff := cmp.Diff(blockResult{Out: want, N: len(enc), Done: true}, got); diff != "" {
		t.Fatalf("round trip of %q via %q: (-want +got)\n%s", x, enc, diff)
	}
}

func TestBlockRoundTrip(t *testing.T) {
	for _, x := range []string{
		"", "\n", "\r", ".", "..", ".\r", ".\r\n", ".\n", "\r\n.\r\n", "a\n.\n",
		"\r\n.\r\n.\r\n..\r\n", "x\r.\r\n", "\x00.\n.\x00", "no newline at all",
	} {
		blockCheckRoundTrip(t, []byte(x), AppendBlock(nil, []byte(x)))
	}
}

func TestBlockReaderEOF(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		wantOut string
		wantErr error
	}{
		{"terminated", "a\r\n.\r\n", "a\r\n", io.EOF},
		{"connection closed mid-line", "a\r\nb", "a\r\nb", io.ErrUnexpectedEOF},
		{"connection closed after dot", "a\r\n.", "a\r\n", io.ErrUnexpectedEOF},
		{"line too long", "abcdefghij\r\n.\r\n", "abcd", ErrLineTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A plain reader: wrapped in a bufio.Reader of the BlockReader's own.
			r := NewBlockReader(iotest.HalfReader(strings.NewReader(tc.in)), 4)
			out, err := io.ReadAll(r)
			if tc.wantErr == io.EOF {
				if err != nil {
					t.Fatalf("ReadAll: %v", err)
				}
			} else if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ReadAll error %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantOut, string(out)); diff != "" {
				t.Fatalf("(-want +got)\n%s", diff)
			}
			// The error stays.
			if n, err2 := r.Read(make([]byte, 10)); n != 0 || (err2 != err && !(err == nil && err2 == io.EOF)) {
				t.Fatalf("Read after the end = %d, %v; want 0, %v", n, err2, err)
			}
		})
	}
}

func TestBlockReaderPipelined(t *testing.T) {
	br := bufio.NewReader(strings.NewReader("220 0 <a@b>\r\n..x\r\n.\r\n223 0 <c@d>\r\n"))
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(NewBlockReader(br, 0))
	if err != nil {
		t.Fatal(err)
	}
	next, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"220 0 <a@b>\r\n", ".x\r\n", "223 0 <c@d>\r\n"}, []string{line, string(body), next}); diff != "" {
		t.Fatalf("(-want +got)\n%s", diff)
	}
}

// blockFailWriter fails every write.
type blockFailWriter struct{}

func (blockFailWriter) Write(p []byte) (int, error) { return 0, errors.New("broken pipe") }

func TestBlockWriterError(t *testing.T) {
	w := NewBlockWriter(blockFailWriter{})
	if n, err := w.Write([]byte("abc\r\n")); n != 0 || err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("Write = %d, %v; want 0 and the writer's error", n, err)
	}
	if err := w.Close(); err == nil {
		t.Fatalf("Close after a failed Write: want the error, got nil")
	}
}

func TestBlockWriterLarge(t *testing.T) {
	blockEachKernel(t, testBlockWriterLarge)
}

func testBlockWriterLarge(t *testing.T) {
	// More than one encoding chunk, with a dot line across the chunk edge.
	x := bytes.Repeat([]byte("0123456789abcde\n"), 3*blockWriteChunk/16)
	x[blockWriteChunk] = '.'
	want := string(AppendBlock(nil, x))
	var b bytes.Buffer
	w := NewBlockWriter(&b)
	if n, err := w.Write(x); n != len(x) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Fatalf("BlockWriter output differs from AppendBlock (lengths %d, %d)", b.Len(), len(want))
	}
	blockCheckRoundTrip(t, x, b.Bytes())
}
