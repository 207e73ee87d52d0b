package gf16

import (
	"encoding/binary"
	"math/bits"
)

// shortWords is the length (in words) below which the portable kernel
// multiplies through log/exp word by word: building the two 256-entry
// split tables (512 XORs) costs more than it saves on fewer words.
const shortWords = 256

// mulAddPortable adds cs[i]*srcs[i][off:off+len(dst)] into dst for every
// source: the portable kernel, and the tail of every SIMD kernel.
func mulAddPortable(dst []byte, srcs [][]byte, cs []uint16, off int) {
	for i, c := range cs {
		if c == 0 {
			continue
		}
		src := srcs[i][off : off+len(dst)]
		if len(dst) < 2*shortWords {
			mulAddLog(dst, src, c)
			continue
		}
		var t splitTab
		t.build(c)
		t.mulAdd(dst, src)
	}
}

// mulAddLog is dst ^= c*src through the log/exp tables, word by word.
func mulAddLog(dst, src []byte, c uint16) {
	lc := int(logTab[c])
	src = src[:len(dst)]
	for i := 0; i+1 < len(dst); i += 2 {
		w := uint16(src[i]) | uint16(src[i+1])<<8
		if w == 0 {
			continue
		}
		p := expTab[int(logTab[w])+lc]
		dst[i] ^= byte(p)
		dst[i+1] ^= byte(p >> 8)
	}
}

// splitTab holds, for one constant c, c times every possible low byte and
// every possible high byte of a word: c*w = lo[w&0xff] ^ hi[w>>8].
type splitTab struct {
	lo, hi [256]uint16
}

// build fills t for constant c. Multiplication by c is linear, so the
// product with a byte is the XOR of the products with its bits: entry b is
// entry b-with-its-lowest-bit-cleared XOR the product with that bit.
func (t *splitTab) build(c uint16) {
	cx := mulX(c)
	for b := 1; b < 256; b++ {
		j := bits.TrailingZeros(uint(b))
		t.lo[b] = t.lo[b&(b-1)] ^ cx[j]
		t.hi[b] = t.hi[b&(b-1)] ^ cx[8+j]
	}
}

// mulAdd is dst ^= c*src for t's constant c, four words per step.
func (t *splitTab) mulAdd(dst, src []byte) {
	src = src[:len(dst)]
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		w := binary.LittleEndian.Uint64(src[i:])
		p := uint64(t.lo[byte(w)]^t.hi[byte(w>>8)]) |
			uint64(t.lo[byte(w>>16)]^t.hi[byte(w>>24)])<<16 |
			uint64(t.lo[byte(w>>32)]^t.hi[byte(w>>40)])<<32 |
			uint64(t.lo[byte(w>>48)]^t.hi[byte(w>>56)])<<48
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(dst[i:])^p)
	}
	for ; i+1 < len(dst); i += 2 {
		p := t.lo[src[i]] ^ t.hi[src[i+1]]
		dst[i] ^= byte(p)
		dst[i+1] ^= byte(p >> 8)
	}
}
