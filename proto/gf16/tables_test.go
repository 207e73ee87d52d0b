package gf16

import (
	"math/rand/v2"
	"testing"
)

// The slow builders state the tables' definitions directly, bit by bit.

func nibbleTabSlow(c uint16) (t [128]byte) {
	for k := 0; k < 4; k++ {
		for n := 0; n < 16; n++ {
			p := mulSlow(c, uint16(n)<<(4*k))
			t[32*k+n], t[32*k+16+n] = byte(p), byte(p>>8)
		}
	}
	return t
}

func affineTabSlow(c uint16) (t [128]byte) {
	for blk := 0; blk < 4; blk++ {
		in, out := 8*(blk&1), 8*(blk>>1)
		for i := 0; i < 8; i++ {
			for j := 0; j < 8; j++ {
				t[8*blk+7-i] |= byte(mulSlow(c, 1<<(in+j))>>(out+i)&1) << j
			}
		}
	}
	return t
}

func TestTables(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	cs := []uint16{0, 1, 2, 0x8000, 0xffff}
	for range 2000 {
		cs = append(cs, uint16(r.Uint32()))
	}
	for _, c := range cs {
		var got [128]byte
		nibbleTab(&got, c)
		if want := nibbleTabSlow(c); got != want {
			t.Fatalf("nibbleTab(%#x) = %x, want %x", c, got, want)
		}
		got = [128]byte{}
		affineTab(&got, c)
		if want := affineTabSlow(c); got != want {
			t.Fatalf("affineTab(%#x) = %x, want %x", c, got[:32], want[:32])
		}
	}
}

func TestTranspose8(t *testing.T) {
	for r := 0; r < 8; r++ {
		for c := 0; c < 8; c++ {
			x := uint64(1) << (8*r + c)
			if got, want := transpose8(x), uint64(1)<<(8*c+r); got != want {
				t.Errorf("transpose8 of row %d column %d = %#016x, want %#016x", r, c, got, want)
			}
		}
	}
}
