package spoolfs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// TestReadAhead: articles read through a ReadAhead are exactly the stored
// ones, in order and out of order, across sealed segments, from the active
// segment while Put still buffers some, and larger than the window; a
// damaged article is refused with ErrCorrupt, and a bad token like Get's.
func TestReadAhead(t *testing.T) {
	tests := []struct {
		name   string
		opts   SpoolOptions
		n      int
		size   int
		window int
		flush  bool // flush Put's buffer to the file before reading
		sync   bool
	}{
		{"active segment, all written", SpoolOptions{}, 200, 2000, 64 << 10, false, true},
		{"active segment, some still buffered", SpoolOptions{FlushSize: 50 << 10}, 200, 2000, 64 << 10, false, false},
		{"sealed segments", SpoolOptions{SegmentSize: 32 << 10}, 200, 2000, 16 << 10, false, true},
		{"articles larger than the window", SpoolOptions{}, 20, 20000, 8 << 10, false, true},
		{"window smaller than one record header", SpoolOptions{}, 5, 100, 1, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openT(t, t.TempDir(), tc.opts)
			defer s.Close()
			toks := make([]Token, tc.n)
			wires := make([][]byte, tc.n)
			for i := range tc.n {
				id := msgID(tc.name, i)
				wires[i] = wireArticle(id, tc.size)
				toks[i] = putT(t, s, id, wires[i], t0.Add(time.Duration(i)*time.Second))
			}
			if tc.flush {
				flushT(t, s)
			}
			if tc.sync {
				if err := s.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			order := make([]int, tc.n)
			for i := range order {
				order[i] = i
			}
			shuffled := append([]int(nil), order...)
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			for _, o := range [][]int{order, shuffled, order} {
				ra := s.NewReadAhead(tc.window)
				dst := []byte("prefix")
				for _, i := range o {
					got, err := ra.AppendArticle(dst, toks[i])
					if err != nil {
						t.Fatalf("article %d: %v", i, err)
					}
					if !bytes.Equal(got[:6], []byte("prefix")) || !bytes.Equal(got[6:], wires[i]) {
						t.Fatalf("article %d: %d bytes that differ from the %d stored", i, len(got)-6, len(wires[i]))
					}
				}
			}
		})
	}

	t.Run("damaged and bad tokens", func(t *testing.T) {
		dir := t.TempDir()
		s := openT(t, dir, SpoolOptions{})
		defer s.Close()
		var toks []Token
		var wires [][]byte
		for i := range 3 {
			id := msgID("dmg", i)
			wires = append(wires, wireArticle(id, 2000))
			toks = append(toks, putT(t, s, id, wires[i], t0))
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		x, err := s.Section(toks[1])
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(x.File.Name(), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte{'#'}, x.Offset+x.Length/2)
		f.Close()
		x.Close()
		ra := s.NewReadAhead(0)
		if _, err := ra.AppendArticle(nil, toks[0]); err != nil {
			t.Fatalf("intact article before the damaged one: %v", err)
		}
		if _, err := ra.AppendArticle(nil, toks[1]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("damaged article: %v, want ErrCorrupt", err)
		}
		if got, err := ra.AppendArticle(nil, toks[2]); err != nil || !bytes.Equal(got, wires[2]) {
			t.Errorf("intact article after the damaged one: %v", err)
		}
		bad := toks[2]
		bad.Off++
		_, gerr := s.Get(bad)
		_, rerr := ra.AppendArticle(nil, bad)
		kind := func(err error) [2]bool { return [2]bool{errors.Is(err, ErrNotFound), errors.Is(err, ErrCorrupt)} }
		if gerr == nil || rerr == nil || kind(rerr) != kind(gerr) {
			t.Errorf("token off by one: ReadAhead %v, Get %v; want the same kind of error", rerr, gerr)
		}
		past := toks[2]
		past.Off += 1 << 20
		if _, err := ra.AppendArticle(nil, past); !errors.Is(err, ErrNotFound) {
			t.Errorf("token past the end: %v, want ErrNotFound", err)
		}
	})
}

// BenchmarkReadAhead compares AppendArticle with a ReadAhead's for 2 KB
// articles read in the order they were stored.
func BenchmarkReadAhead(b *testing.B) {
	s := openT(b, b.TempDir(), SpoolOptions{})
	defer s.Close()
	var toks []Token
	for i := range 2000 {
		id := msgID("bench", i)
		toks = append(toks, putT(b, s, id, wireArticle(id, 2000), t0))
	}
	if err := s.Sync(); err != nil {
		b.Fatal(err)
	}
	for _, ahead := range []bool{false, true} {
		b.Run(map[bool]string{false: "AppendArticle", true: "ReadAhead"}[ahead], func(b *testing.B) {
			ra := s.NewReadAhead(0)
			buf := make([]byte, 0, 4096)
			i := 0
			for b.Loop() {
				var err error
				if ahead {
					buf, err = ra.AppendArticle(buf[:0], toks[i])
				} else {
					buf, err = s.AppendArticle(buf[:0], toks[i])
				}
				if err != nil {
					b.Fatal(err)
				}
				i = (i + 1) % len(toks)
			}
		})
	}
}

// BenchmarkReadAheadRuns reads 2 KB articles as one of four connections
// sharing a peer's queue does: runs of 80 stored together, each the next
// quarter's first, with and without Bound to the run (ns per article).
func BenchmarkReadAheadRuns(b *testing.B) {
	s := openT(b, b.TempDir(), SpoolOptions{})
	defer s.Close()
	var toks []Token
	for i := range 8000 {
		id := msgID("runs", i)
		toks = append(toks, putT(b, s, id, wireArticle(id, 2000), t0))
	}
	if err := s.Sync(); err != nil {
		b.Fatal(err)
	}
	const run, stride = 80, 320
	for _, bound := range []bool{false, true} {
		b.Run(map[bool]string{false: "window", true: "bound"}[bound], func(b *testing.B) {
			ra := s.NewReadAhead(0)
			buf := make([]byte, 0, 4096)
			i := 0
			for b.Loop() {
				if bound && i%run == 0 {
					last := toks[(i/run*stride+run-1)%len(toks)]
					ra.Bound(last.Seg, int64(last.Off)+int64(last.Len))
				}
				var err error
				buf, err = ra.AppendArticle(buf[:0], toks[(i/run*stride+i%run)%len(toks)])
				if err != nil {
					b.Fatal(err)
				}
				i = (i + 1) % (run * len(toks) / stride)
			}
		})
	}
}

// TestReadAheadBound: after Bound, a window filled for an article before
// the bound's end holds no octet past it (what a connection whose next
// articles lie elsewhere would never ask for), and articles past the bound,
// in its segment or out of order, still read exactly as stored.
func TestReadAheadBound(t *testing.T) {
	s := openT(t, t.TempDir(), SpoolOptions{})
	defer s.Close()
	const n = 40
	toks := make([]Token, n)
	wires := make([][]byte, n)
	for i := range n {
		id := msgID("bound", i)
		wires[i] = wireArticle(id, 2000)
		toks[i] = putT(t, s, id, wires[i], t0.Add(time.Duration(i)*time.Second))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	ra := s.NewReadAhead(64 << 10) // room for all 40 articles
	end := int64(toks[9].Off) + int64(toks[9].Len)
	ra.Bound(toks[0].Seg, end)
	want := func(i int) {
		t.Helper()
		got, err := ra.AppendArticle(nil, toks[i])
		if err != nil {
			t.Fatalf("article %d: %v", i, err)
		}
		if !bytes.Equal(got, wires[i]) {
			t.Fatalf("article %d: %d bytes that differ from the %d stored", i, len(got), len(wires[i]))
		}
	}
	want(0)
	if got := ra.off + int64(len(ra.buf)); got != end {
		t.Fatalf("window filled for article 0 ends at offset %d, want the bound's %d", got, end)
	}
	for _, i := range []int{1, 9, 10, 39, 5, 20} {
		want(i)
	}
	// Article 10 lies past the bound: its window was not cut to it.
	want(10)
	if got, min := ra.off+int64(len(ra.buf)), int64(toks[11].Off); got < min {
		t.Fatalf("window for article 10, past the bound, ends at %d, before article 11 (%d)", got, min)
	}
}
