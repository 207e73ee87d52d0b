// Package gf16 is arithmetic in GF(2^16) with the generator polynomial
// 0x1100B (x^16 + x^12 + x^3 + x + 1), the field of PAR 2.0's Reed–Solomon
// code, where 2 is a primitive element.
//
// This is the small portable reference written for the PAR2 work so it is
// not blocked; the SIMD engineer's package (AVX2, AVX-512, same API)
// replaces it when the branches are merged. Region operations treat a byte
// slice as little-endian 16-bit words, as PAR2 does.
package gf16

import "encoding/binary"

// Poly is the field's generator polynomial.
const Poly = 0x1100B

// Order is the number of non-zero elements, 2^16-1.
const Order = 65535

var (
	exp [2 * Order]uint16 // exp[i] = 2^i, doubled so log sums need no mod
	log [1 << 16]uint16   // log[2^i] = i; log[0] unused
)

func init() {
	x := uint32(1)
	for i := 0; i < Order; i++ {
		exp[i] = uint16(x)
		exp[i+Order] = uint16(x)
		log[x] = uint16(i)
		x <<= 1
		if x&0x10000 != 0 {
			x ^= Poly
		}
	}
}

// Mul returns a*b.
func Mul(a, b uint16) uint16 {
	if a == 0 || b == 0 {
		return 0
	}
	return exp[int(log[a])+int(log[b])]
}

// Inv returns the multiplicative inverse of a; Inv(0) is 0.
func Inv(a uint16) uint16 {
	if a == 0 {
		return 0
	}
	return exp[Order-int(log[a])]
}

// Pow returns a^n (a^0 is 1, also for a == 0).
func Pow(a uint16, n uint32) uint16 {
	if n == 0 {
		return 1
	}
	if a == 0 {
		return 0
	}
	return exp[uint64(log[a])*uint64(n)%Order]
}

// MulAdd sets dst ^= c*src word by word. len(dst) must equal len(src) and be
// even.
func MulAdd(dst, src []byte, c uint16) {
	if len(dst) != len(src) || len(dst)%2 != 0 {
		panic("gf16: MulAdd: lengths differ or are odd")
	}
	if c == 0 {
		return
	}
	// Split tables: c*w = c*(w&0xff) ^ c*(w&0xff00).
	var lo, hi [256]uint16
	for i := 1; i < 256; i++ {
		lo[i] = Mul(c, uint16(i))
		hi[i] = Mul(c, uint16(i)<<8)
	}
	for i := 0; i+8 <= len(src); i += 8 {
		s := binary.LittleEndian.Uint64(src[i:])
		p := uint64(lo[byte(s)]^hi[byte(s>>8)]) |
			uint64(lo[byte(s>>16)]^hi[byte(s>>24)])<<16 |
			uint64(lo[byte(s>>32)]^hi[byte(s>>40)])<<32 |
			uint64(lo[byte(s>>48)]^hi[byte(s>>56)])<<48
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(dst[i:])^p)
	}
	for i := len(src) &^ 7; i < len(src); i += 2 {
		w := binary.LittleEndian.Uint16(src[i:])
		binary.LittleEndian.PutUint16(dst[i:], binary.LittleEndian.Uint16(dst[i:])^lo[byte(w)]^hi[w>>8])
	}
}

// MulAddMulti sets dst ^= sum of cs[i]*srcs[i].
func MulAddMulti(dst []byte, srcs [][]byte, cs []uint16) {
	for i, s := range srcs {
		MulAdd(dst, s, cs[i])
	}
}
