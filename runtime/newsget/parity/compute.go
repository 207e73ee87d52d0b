package parity

import (
	"sync"
	"sync/atomic"

	"github.com/newsflow/newsflow/proto/gf16"
)

// tile is the stretch of a slice one worker takes at a time: small enough
// that a batch of input tiles and the output tile stay in cache while the
// outputs are accumulated.
const tile = 16 << 10

// group is how many source tiles go to each output at a time.
const group = 16

// accumulate sets dst[j] ^= sum over s of coef[j][s] * srcs[s], splitting
// the length into tiles that workers take in turn. All slices have the
// same even length.
func accumulate(dst, srcs [][]byte, coef [][]uint16, workers int) {
	if len(dst) == 0 || len(srcs) == 0 {
		return
	}
	n := len(dst[0])
	tiles := (n + tile - 1) / tile
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, tiles) {
		wg.Go(func() {
			in := make([][]byte, len(srcs))
			for {
				t := int(next.Add(1) - 1)
				if t >= tiles {
					return
				}
				a, b := t*tile, min(t*tile+tile, n)
				for s := range srcs {
					in[s] = srcs[s][a:b]
				}
				// Sources in groups, so a group's tiles stay in cache while
				// every output takes them in.
				for g := 0; g < len(in); g += group {
					h := min(g+group, len(in))
					for j := range dst {
						gf16.MulAddMulti(dst[j][a:b], in[g:h], coef[j][g:h])
					}
				}
			}
		})
	}
	wg.Wait()
}

// multiply sets v = m*v for the k vectors v (k*k matrix m), tile by tile,
// in place: each worker computes a tile of every output into scratch,
// then copies it back.
func multiply(v [][]byte, m [][]uint16, workers int) {
	k := len(v)
	if k == 0 {
		return
	}
	n := len(v[0])
	// Scratch is k tiles per worker: shrink the tile as k grows so it
	// stays near 1 MiB (k is at most par2.MaxMissing).
	tile := min(max(1<<20/k&^1, 1<<10), tile)
	tiles := (n + tile - 1) / tile
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, tiles) {
		wg.Go(func() {
			out := make([][]byte, k)
			for i := range out {
				out[i] = make([]byte, tile)
			}
			in := make([][]byte, k)
			for {
				t := int(next.Add(1) - 1)
				if t >= tiles {
					return
				}
				a, b := t*tile, min(t*tile+tile, n)
				for j := range v {
					in[j] = v[j][a:b]
				}
				for i := range out {
					clear(out[i][:b-a])
					gf16.MulAddMulti(out[i][:b-a], in, m[i])
				}
				for i := range out {
					copy(v[i][a:b], out[i][:b-a])
				}
			}
		})
	}
	wg.Wait()
}
