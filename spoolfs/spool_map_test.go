//go:build linux

package spoolfs

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestMapArticle checks a mapped article: its bytes are the stored
// article's, Verify agrees with Get on intact and damaged articles, and a
// file cut short under the mapping makes Verify fail (the SIGBUS of the
// read becomes an error) instead of killing the process.
func TestMapArticle(t *testing.T) {
	size := 300_000 // several pages, not page aligned in the file
	tests := []struct {
		name   string
		damage func(t *testing.T, path string, tok Token)
		want   error
	}{
		{"intact", func(*testing.T, string, Token) {}, nil},
		{"first byte flipped", flipAt(0), ErrCorrupt},
		{"byte flipped mid-article", flipAt(size / 2), ErrCorrupt},
		{"last byte flipped", flipAt(-1), ErrCorrupt},
		{"file cut short under the mapping", func(t *testing.T, path string, tok Token) {
			// Whole pages beyond the end of the file fault when read.
			if err := os.Truncate(path, int64(tok.Off)+4096); err != nil {
				t.Fatal(err)
			}
		}, syscall.EIO},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, SpoolOptions{})
			defer s.Close()
			id := msgID(t.Name(), 0)
			wire := wireArticle(id, size)
			putT(t, s, msgID(t.Name(), 1), wireArticle(msgID(t.Name(), 1), 777), t0) // the next one starts mid-page
			tok := putT(t, s, id, wire, t0)
			flushT(t, s)
			m, err := s.MapArticle(tok)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if !bytes.Equal(m.Bytes(), wire) {
				t.Fatal("mapped bytes differ from the stored article")
			}
			if m.IDSum() != crc32c([]byte(id)) {
				t.Errorf("IDSum = %08x, want the CRC of %s", m.IDSum(), id)
			}
			if sum, err := s.IDSum(tok); err != nil || sum != m.IDSum() {
				t.Errorf("Spool.IDSum = %08x, %v; want %08x", sum, err, m.IDSum())
			}
			tc.damage(t, segFile(dir, tok.Seg), tok)
			err = m.Verify()
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
			if tc.want == ErrCorrupt {
				// The pread path agrees.
				if _, gerr := s.Get(tok); !errors.Is(gerr, ErrCorrupt) {
					t.Errorf("Get = %v, Verify = %v: they disagree", gerr, err)
				}
			}
			if err := m.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := m.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

// TestMapArticleErrors: tokens that name no article are refused as
// Section refuses them, without mapping anything.
func TestMapArticleErrors(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{})
	defer s.Close()
	id := msgID(t.Name(), 0)
	tok := putT(t, s, id, wireArticle(id, 5000), t0)
	flushT(t, s)
	for _, bad := range []Token{{}, {Seg: tok.Seg, Off: tok.Off, Len: tok.Len + 1}, {Seg: tok.Seg + 7, Off: tok.Off, Len: tok.Len}} {
		if m, err := s.MapArticle(bad); !errors.Is(err, ErrNotFound) {
			if m != nil {
				m.Close()
			}
			t.Errorf("MapArticle(%s) = %v, want ErrNotFound", bad, err)
		}
	}
}

// BenchmarkMapVerify is MapArticle, Verify and Close on a 500 KB article
// in the page cache: the send path's check before it writes the article
// from the mapping (BenchmarkVerify is the pread path).
func BenchmarkMapVerify(b *testing.B) {
	s := openT(b, b.TempDir(), SpoolOptions{})
	defer s.Close()
	id := msgID(b.Name(), 0)
	tok := putT(b, s, id, wireArticle(id, 500_000), t0)
	flushT(b, s)
	b.SetBytes(int64(tok.Len))
	for b.Loop() {
		m, err := s.MapArticle(tok)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Verify(); err != nil {
			b.Fatal(err)
		}
		m.Close()
	}
}
