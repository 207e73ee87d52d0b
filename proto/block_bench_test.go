package proto

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

// Run with: go test -bench Block -run '^$' ./proto/
// BenchmarkCopyBlock is the baseline: the same bytes moved with copy. Its
// name holds "Block" so the command above prints it beside the codec.

// blockBenchSizes are the body sizes measured.
var blockBenchSizes = []struct {
	name string
	size int
}{
	{"1KB", 1 << 10},
	{"100KB", 100 << 10},
	{"1MB", 1 << 20},
}

// blockBenchBody returns about size bytes of realistic article text: CRLF lines
// of 70 to 128 characters, words of letters and punctuation, one line in 40
// beginning with '.'. The same size always gives the same bytes.
func blockBenchBody(size int) []byte {
	r := rand.New(rand.NewPCG(uint64(size), 1))
	words := []string{"the", "news", "server", "article", "feed", "and", "of", "group,",
		"message-id", "peer", "spool.", "to", "queue", "is", "a", "binary", "post", "reply"}
	var b bytes.Buffer
	for b.Len() < size {
		n := 70 + r.IntN(59)
		start := b.Len()
		if r.IntN(40) == 0 {
			b.WriteByte('.')
		}
		for b.Len()-start < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// blockBenchBlock returns the body and its encoding.
func blockBenchBlock(size int) (body, enc []byte) {
	body = blockBenchBody(size)
	return body, AppendBlock(nil, body)
}

func BenchmarkBlockDecode(b *testing.B) {
	for _, s := range blockBenchSizes {
		body, enc := blockBenchBlock(s.size)
		b.Run(s.name, func(b *testing.B) {
			d := NewBlockDecoder(0)
			dst := make([]byte, 0, len(enc))
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				d.Reset()
				out, _, done, err := d.Decode(dst, enc)
				if err != nil || !done || len(out) != len(body) {
					b.Fatalf("decode: done=%v err=%v len=%d", done, err, len(out))
				}
			}
		})
	}
}

func BenchmarkBlockDecodeInPlace(b *testing.B) {
	for _, s := range blockBenchSizes {
		body, enc := blockBenchBlock(s.size)
		b.Run(s.name, func(b *testing.B) {
			d := NewBlockDecoder(0)
			buf := make([]byte, len(enc))
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				// The copy is part of the measure: a caller's read fills the
				// buffer each time. Compare with 2x BenchmarkCopyBlock.
				copy(buf, enc)
				d.Reset()
				m, _, done, err := d.DecodeInPlace(buf)
				if err != nil || !done || m != len(body) {
					b.Fatalf("decode: done=%v err=%v len=%d", done, err, m)
				}
			}
		})
	}
}

// BenchmarkBlockDecodeChunked feeds the block in 16 KB reads, as from a
// socket.
func BenchmarkBlockDecodeChunked(b *testing.B) {
	const chunk = 16 << 10
	for _, s := range blockBenchSizes {
		body, enc := blockBenchBlock(s.size)
		b.Run(s.name, func(b *testing.B) {
			d := NewBlockDecoder(0)
			dst := make([]byte, 0, len(enc))
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				d.Reset()
				out := dst
				for p := 0; p < len(enc); p += chunk {
					out, _, _, _ = d.Decode(out, enc[p:min(len(enc), p+chunk)])
				}
				if !d.Done() || len(out) != len(body) {
					b.Fatalf("decode: done=%v len=%d", d.Done(), len(out))
				}
			}
		})
	}
}

func BenchmarkBlockReader(b *testing.B) {
	for _, s := range blockBenchSizes {
		body, enc := blockBenchBlock(s.size)
		b.Run(s.name, func(b *testing.B) {
			rd := bytes.NewReader(enc)
			br := bufio.NewReaderSize(rd, 32<<10)
			buf := make([]byte, 32<<10)
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				rd.Reset(enc)
				br.Reset(rd)
				n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{NewBlockReader(br, 0)}, buf)
				if err != nil || int(n) != len(body) {
					b.Fatalf("read: n=%d err=%v", n, err)
				}
			}
		})
	}
}

func BenchmarkBlockEncode(b *testing.B) {
	for _, s := range blockBenchSizes {
		body, enc := blockBenchBlock(s.size)
		b.Run(s.name, func(b *testing.B) {
			dst := make([]byte, 0, len(enc)+64) // no growth inside the loop
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if out := AppendBlock(dst, body); len(out) != len(enc) {
					b.Fatal(fmt.Sprint("encode: len ", len(out)))
				}
			}
		})
	}
}

// BenchmarkCopyBlock is the baseline: copy of the encoded block.
func BenchmarkCopyBlock(b *testing.B) {
	for _, s := range blockBenchSizes {
		_, enc := blockBenchBlock(s.size)
		b.Run(s.name, func(b *testing.B) {
			dst := make([]byte, len(enc))
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				copy(dst, enc)
			}
		})
	}
}
