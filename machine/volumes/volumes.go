// Package volumes holds the pure decisions newsget makes after a
// download: which PAR2 recovery volumes to fetch, and what a PAR2 file's
// name says (names.go).
//
// Theory of operation: the NZB's recovery volumes (NAME.volNN+MM.par2) are
// held back while the data downloads. Verify then counts the input slices
// to rebuild (need). Choose picks, among the volumes not yet fetched, the
// set that brings at least need recovery blocks for the fewest bytes: a
// 0/1 covering knapsack, solved exactly by dynamic programming over the
// block count (capped at need), since the volumes of a set are few and
// need is at most 32768. Ties go to fewer volumes, then to the earlier
// volumes in the order given. Nothing here reads a file or a clock.
package volumes

import (
	"fmt"
	"slices"
)

// A Volume is a recovery volume that can be fetched.
type Volume struct {
	Name   string
	Blocks int   // recovery blocks (slices) it holds
	Size   int64 // bytes to download
}

// Limits on what Choose will plan over.
const (
	MaxNeed    = 32768 // input slices a PAR2 set can have
	MaxVolumes = 256
)

// Choose returns the volumes to fetch, in the order given, so that their
// blocks add up to at least need with the fewest bytes. It fails when all
// of them together are not enough, saying how many blocks are missing.
func Choose(need int, vols []Volume) ([]Volume, error) {
	if need <= 0 {
		return nil, nil
	}
	if need > MaxNeed {
		return nil, fmt.Errorf("postproc: %d blocks needed, more than a PAR2 set can have (%d)", need, MaxNeed)
	}
	if len(vols) > MaxVolumes {
		return nil, fmt.Errorf("postproc: %d recovery volumes, limit %d", len(vols), MaxVolumes)
	}
	total := 0
	for _, v := range vols {
		if v.Blocks < 0 || v.Size < 0 {
			return nil, fmt.Errorf("postproc: volume %s: negative blocks or size", v.Name)
		}
		total += v.Blocks
	}
	if total < need {
		return nil, fmt.Errorf("postproc: %d blocks needed, the volumes hold %d: %d short", need, total, need-total)
	}
	// cur[b]: the best (bytes, count) reaching b blocks (b == need means
	// need or more) with the volumes considered so far. pred[i][b] is the
	// block count volume i was added to when it improved b, -1 otherwise,
	// so the choice can be walked back from need.
	type cost struct {
		bytes int64
		count int
		ok    bool
	}
	cur := make([]cost, need+1)
	cur[0] = cost{ok: true}
	pred := make([][]int32, len(vols))
	for i, v := range vols {
		next := append([]cost(nil), cur...)
		pred[i] = make([]int32, need+1)
		for b := range pred[i] {
			pred[i][b] = -1
		}
		for b := 0; b <= need; b++ {
			if !cur[b].ok {
				continue
			}
			nb := min(b+v.Blocks, need)
			c := cost{bytes: cur[b].bytes + v.Size, count: cur[b].count + 1, ok: true}
			if o := next[nb]; !o.ok || c.bytes < o.bytes || c.bytes == o.bytes && c.count < o.count {
				next[nb] = c
				pred[i][nb] = int32(b)
			}
		}
		cur = next
	}
	var out []Volume
	for i, b := len(vols)-1, need; i >= 0; i-- {
		if p := pred[i][b]; p >= 0 {
			out = append(out, vols[i])
			b = int(p)
		}
	}
	slices.Reverse(out)
	return out, nil
}
