package spoolfs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"
)

// TestSharedReadAhead reads every article through one SharedReadAhead
// from several goroutines at once, each in its own order (the fan-out's
// connections), and wants exactly the stored bytes every time.
func TestSharedReadAhead(t *testing.T) {
	tests := []struct {
		name    string
		opts    SpoolOptions
		n       int
		size    int
		window  int
		windows int
		flush   bool // flush Put's buffer to the file before reading
		sync    bool
	}{
		{"active segment, all written", SpoolOptions{}, 200, 2000, 64 << 10, 4, false, true},
		{"active segment, some still buffered", SpoolOptions{FlushSize: 50 << 10}, 200, 2000, 64 << 10, 4, false, false},
		{"sealed segments", SpoolOptions{SegmentSize: 32 << 10}, 200, 2000, 16 << 10, 4, false, true},
		{"one window", SpoolOptions{}, 200, 2000, 16 << 10, 1, false, true},
		{"articles larger than the window", SpoolOptions{}, 20, 20000, 8 << 10, 4, false, true},
		{"window smaller than one record header", SpoolOptions{}, 5, 100, 1, 2, true, false},
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
			ra := s.NewSharedReadAhead(tc.window, tc.windows)
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for g := range 8 {
				order := make([]int, tc.n)
				for i := range order {
					order[i] = i
				}
				if g%2 == 1 {
					rand.New(rand.NewPCG(1, uint64(g))).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				}
				wg.Go(func() {
					dst := []byte("prefix")
					for _, i := range order {
						got, err := ra.AppendArticle(dst, toks[i])
						if err != nil {
							errs <- err
							return
						}
						if !bytes.Equal(got[:6], []byte("prefix")) || !bytes.Equal(got[6:], wires[i]) {
							errs <- errors.New("bytes differ from the stored article")
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
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
		ra := s.NewSharedReadAhead(0, 0)
		// Twice each: the second copy comes from the window the first
		// one filled, and a damaged article must fail every time.
		for range 2 {
			if got, err := ra.AppendArticle(nil, toks[0]); err != nil || !bytes.Equal(got, wires[0]) {
				t.Fatalf("intact article before the damaged one: %v", err)
			}
			if _, err := ra.AppendArticle(nil, toks[1]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("damaged article: %v, want ErrCorrupt", err)
			}
			if got, err := ra.AppendArticle(nil, toks[2]); err != nil || !bytes.Equal(got, wires[2]) {
				t.Errorf("intact article after the damaged one: %v", err)
			}
		}
		kind := func(err error) [2]bool { return [2]bool{errors.Is(err, ErrNotFound), errors.Is(err, ErrCorrupt)} }
		// A token whose record was checked, but with another length:
		// the header still decides.
		short := toks[0]
		short.Len--
		_, gerr := s.Get(short)
		_, rerr := ra.AppendArticle(nil, short)
		if gerr == nil || rerr == nil || kind(rerr) != kind(gerr) {
			t.Errorf("token one byte short of a checked record: SharedReadAhead %v, Get %v; want the same kind of error", rerr, gerr)
		}
		bad := toks[2]
		bad.Off++
		_, gerr = s.Get(bad)
		_, rerr = ra.AppendArticle(nil, bad)
		if gerr == nil || rerr == nil || kind(rerr) != kind(gerr) {
			t.Errorf("token off by one: SharedReadAhead %v, Get %v; want the same kind of error", rerr, gerr)
		}
		past := toks[2]
		past.Off += 1 << 20
		if _, err := ra.AppendArticle(nil, past); !errors.Is(err, ErrNotFound) {
			t.Errorf("token past the end: %v, want ErrNotFound", err)
		}
	})
}
