package spoolfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"
)

// TestVerifyChunks checks Verify on an article longer than verifyChunk:
// the CRC is carried across chunks, and damage or a cut in any chunk is
// found, with the errors Get gives.
func TestVerifyChunks(t *testing.T) {
	size := 3*verifyChunk + 1234
	tests := []struct {
		name   string
		damage func(t *testing.T, path string, tok Token)
		want   error
	}{
		{"intact", func(*testing.T, string, Token) {}, nil},
		{"byte flipped in the first chunk", flipAt(10), ErrCorrupt},
		{"byte flipped in the third chunk", flipAt(2*verifyChunk + 7), ErrCorrupt},
		{"last byte flipped", flipAt(-1), ErrCorrupt},
		{"cut in the second chunk", func(t *testing.T, path string, tok Token) {
			if err := os.Truncate(path, int64(tok.Off)+verifyChunk+99); err != nil {
				t.Fatal(err)
			}
		}, ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, SpoolOptions{})
			defer s.Close()
			id := msgID(t.Name(), 0)
			tok := putT(t, s, id, wireArticle(id, size), t0)
			flushT(t, s)
			tc.damage(t, segFile(dir, tok.Seg), tok)
			scratch, err := s.Verify(tok, nil)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
			if len(scratch) != 0 {
				t.Errorf("Verify returned %d bytes of scratch, want an empty slice to reuse", len(scratch))
			}
			// Get agrees.
			if _, gerr := s.Get(tok); !errors.Is(gerr, tc.want) || (tc.want == nil && gerr != nil) {
				t.Errorf("Get = %v, Verify = %v: they disagree", gerr, err)
			}
		})
	}
}

// flipAt returns a damage that inverts the article's byte at i (from the
// end when negative).
func flipAt(i int) func(t *testing.T, path string, tok Token) {
	return func(t *testing.T, path string, tok Token) {
		if i < 0 {
			i += int(tok.Len)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var b [1]byte
		off := int64(tok.Off) + int64(i)
		if _, err := f.ReadAt(b[:], off); err != nil {
			t.Fatal(err)
		}
		b[0] ^= 0xff
		if _, err := f.WriteAt(b[:], off); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkVerify is Verify on a 500 KB article in the page cache.
// BenchmarkSendArticle compares it, with what sends the article, to the
// other ways to check and send it (a read-only mapping among them).
func BenchmarkVerify(b *testing.B) {
	s := openT(b, b.TempDir(), SpoolOptions{})
	defer s.Close()
	id := msgID(b.Name(), 0)
	tok := putT(b, s, id, wireArticle(id, 500_000), t0)
	flushT(b, s)
	var scratch []byte
	b.SetBytes(int64(tok.Len))
	for b.Loop() {
		var err error
		if scratch, err = s.Verify(tok, scratch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAppendArticleInPlace: AppendArticle reads a large article straight
// into dst after what dst holds, whatever that is (the header is read into
// the bytes before, lent and put back, when there are enough of them), and
// finds a flipped byte or a cut segment as Verify does, leaving dst's
// bytes as they were.
func TestAppendArticleInPlace(t *testing.T) {
	size := 500_000
	damages := []struct {
		name   string
		damage func(t *testing.T, path string, tok Token)
		want   error
	}{
		{"intact", func(*testing.T, string, Token) {}, nil},
		{"byte flipped", flipAt(size / 2), ErrCorrupt},
		{"last byte flipped", flipAt(-1), ErrCorrupt},
		{"cut in the article", func(t *testing.T, path string, tok Token) {
			if err := os.Truncate(path, int64(tok.Off)+99); err != nil {
				t.Fatal(err)
			}
		}, ErrNotFound},
		{"cut in the header", func(t *testing.T, path string, tok Token) {
			if err := os.Truncate(path, int64(tok.Off)-5); err != nil {
				t.Fatal(err)
			}
		}, ErrNotFound},
	}
	for _, tc := range damages {
		for _, prefix := range []int{0, 5, recHeaderSize, 100} {
			t.Run(fmt.Sprintf("%s/prefix=%d", tc.name, prefix), func(t *testing.T) {
				dir := t.TempDir()
				s := openT(t, dir, SpoolOptions{})
				defer s.Close()
				id := msgID("inplace", 0)
				wire := wireArticle(id, size)
				tok := putT(t, s, id, wire, t0)
				flushT(t, s)
				tc.damage(t, segFile(dir, tok.Seg), tok)
				pre := bytes.Repeat([]byte{'p'}, prefix)
				for _, room := range []int{0, size + 64} { // grown, or read into the capacity
					dst := append(make([]byte, 0, prefix+room), pre...)
					got, err := s.AppendArticle(dst, tok)
					if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
						t.Fatalf("room %d: AppendArticle = %v, want %v", room, err, tc.want)
					}
					if !bytes.Equal(got[:prefix], pre) {
						t.Errorf("room %d: the bytes before the article changed: %q", room, got[:prefix])
					}
					switch {
					case err != nil && len(got) != prefix:
						t.Errorf("room %d: %d bytes returned with the error, want the %d there were", room, len(got), prefix)
					case err == nil && !bytes.Equal(got[prefix:], wire):
						t.Errorf("room %d: the article read differs from the one stored", room)
					}
				}
			})
		}
	}
}
