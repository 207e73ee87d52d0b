package gf16

import (
	"encoding/binary"
	"math/bits"
)

// The kernels' per-constant tables. MulAddMulti builds one per source per
// call, and callers that tile their work (16 KiB per call, say) make many
// calls, so building must cost little next to the kernel's own work: two
// lookups and a few XORs per constant (about 10 ns; computing the tables
// from scratch took 70 to 200).

// mulX returns the products c*x^j for j = 0..15: the images of the basis
// under "multiply by c", from which every table below is built. Doubling
// reduces without a branch (a branch on a random constant's top bit
// mispredicts half the time).
func mulX(c uint16) (cx [16]uint16) {
	for j := range cx {
		cx[j] = c
		c = c<<1 ^ -(c>>15)&(Poly&0xffff)
	}
	return cx
}

// Byte masks of the entries n = 0..7 of a 16-entry table whose bit 0, 1
// or 2 is set, and the byte broadcast multiplier.
const (
	nib1  = 0xff00ff00ff00ff00
	nib2  = 0xffff0000ffff0000
	nib4  = 0xffffffff00000000
	bcast = 0x0101010101010101
)

// nibbleTab fills t with the split tables of the VPSHUFB kernels for
// constant c. Nibble k of a word (k = 0..3, from the least significant)
// with value n contributes c*(n << 4k); bytes 32k..32k+15 of t hold the
// low bytes of those 16 products, bytes 32k+16..32k+31 the high bytes.
// The tables are linear in c, so they are those of c's low byte XOR those
// of its high byte, from two 256-entry tables built at start (64 KiB).
func nibbleTab(t *[128]byte, c uint16) {
	lo, hi := &nibbleByLo[byte(c)], &nibbleByHi[c>>8]
	for i := range 16 {
		binary.LittleEndian.PutUint64(t[8*i:], lo[i]^hi[i])
	}
}

// nibbleByLo[b] and nibbleByHi[b] are nibbleTables(b) and
// nibbleTables(b << 8) as little-endian uint64s.
var nibbleByLo, nibbleByHi = func() (lo, hi [256][16]uint64) {
	for b := range 256 {
		tl, th := nibbleTables(uint16(b)), nibbleTables(uint16(b)<<8)
		for i := range 16 {
			lo[b][i] = binary.LittleEndian.Uint64(tl[8*i:])
			hi[b][i] = binary.LittleEndian.Uint64(th[8*i:])
		}
	}
	return lo, hi
}()

// nibbleTables computes nibbleTab's tables for c. Entry n is the XOR of
// the products with n's bits, so 8 entries at a time are the bit products
// broadcast to every byte, masked to the entries that have the bit, and
// XORed; entries 8..15 add bit 3's.
func nibbleTables(c uint16) (t [128]byte) {
	cx := mulX(c)
	for k := 0; k < 4; k++ {
		a, b, cc, d := cx[4*k], cx[4*k+1], cx[4*k+2], cx[4*k+3]
		for half := 0; half < 2; half++ {
			sh := 8 * half
			lo := uint64(byte(a>>sh))*bcast&nib1 ^
				uint64(byte(b>>sh))*bcast&nib2 ^
				uint64(byte(cc>>sh))*bcast&nib4
			binary.LittleEndian.PutUint64(t[32*k+16*half:], lo)
			binary.LittleEndian.PutUint64(t[32*k+16*half+8:], lo^uint64(byte(d>>sh))*bcast)
		}
	}
	return t
}

// affineTab fills t[0:32] with the four 8x8 bit matrices of "multiply by
// c" for GF2P8AFFINEQB, as little-endian uint64s in the order low byte to
// low byte, high to low, low to high, high to high. The matrices are
// linear in c, so they are those of c's low byte XOR those of its high
// byte, from two 256-entry tables built at start (16 KiB).
func affineTab(t *[128]byte, c uint16) {
	lo, hi := &affineByLo[byte(c)], &affineByHi[c>>8]
	for i := range 4 {
		binary.LittleEndian.PutUint64(t[8*i:], lo[i]^hi[i])
	}
}

// affineByLo[b] and affineByHi[b] are affineMatrices(b) and
// affineMatrices(b << 8).
var affineByLo, affineByHi = func() (lo, hi [256][4]uint64) {
	for b := range 256 {
		lo[b] = affineMatrices(uint16(b))
		hi[b] = affineMatrices(uint16(b) << 8)
	}
	return lo, hi
}()

// affineMatrices computes affineTab's matrices for c. GF2P8AFFINEQB
// computes output bit i of a byte as the parity of (matrix byte 7-i AND
// input), so byte 7-i of a block holds, in bit j, bit i of the block's
// output half of c*x^j for j ranging over the block's input half: the bit
// transpose of the 8 bytes "output half of c*x^j", byte-reversed.
func affineMatrices(c uint16) (m [4]uint64) {
	cx := mulX(c)
	for blk := range m {
		in, out := 8*(blk&1), 8*(blk>>1) // input and output byte of the block
		var cols uint64                  // byte j: output half of c*x^(in+j)
		for j := 7; j >= 0; j-- {
			cols = cols<<8 | uint64(byte(cx[in+j]>>out))
		}
		m[blk] = bits.ReverseBytes64(transpose8(cols))
	}
	return m
}

// transpose8 transposes the 8x8 bit matrix x whose byte r is row r and
// whose bit c of a byte is column c: bit c of byte r of the result is bit
// r of byte c of x. Three rounds swap the off-diagonal 1x1, 2x2 and 4x4
// blocks (Hacker's Delight §7-3).
func transpose8(x uint64) uint64 {
	t := (x ^ x>>7) & 0x00AA00AA00AA00AA
	x ^= t ^ t<<7
	t = (x ^ x>>14) & 0x0000CCCC0000CCCC
	x ^= t ^ t<<14
	t = (x ^ x>>28) & 0x00000000F0F0F0F0
	x ^= t ^ t<<28
	return x
}
