package gf16

// mulX returns the products c*x^j for j = 0..15: the images of the basis
// under "multiply by c", from which every table below is built.
func mulX(c uint16) (cx [16]uint16) {
	x := uint32(c)
	for j := range cx {
		cx[j] = uint16(x)
		x <<= 1
		if x&0x10000 != 0 {
			x ^= Poly
		}
	}
	return cx
}

// nibbleTab fills t with the split tables of the VPSHUFB kernels for
// constant c. Nibble k of a word (k = 0..3, from the least significant)
// with value n contributes c*(n << 4k); bytes 32k..32k+15 of t hold the
// low bytes of those 16 products, bytes 32k+16..32k+31 the high bytes.
func nibbleTab(t *[128]byte, c uint16) {
	cx := mulX(c)
	for k := 0; k < 4; k++ {
		for n := 0; n < 16; n++ {
			var p uint16
			for b := 0; b < 4; b++ {
				if n&(1<<b) != 0 {
					p ^= cx[4*k+b]
				}
			}
			t[32*k+n] = byte(p)
			t[32*k+16+n] = byte(p >> 8)
		}
	}
}

// affineTab fills t[0:32] with the four 8x8 bit matrices of "multiply by
// c" for GF2P8AFFINEQB, as little-endian uint64s in the order low byte to
// low byte, high to low, low to high, high to high. GF2P8AFFINEQB computes
// output bit i of a byte as the parity of (matrix byte 7-i AND input), so
// byte 7-i of a block holds, in bit j, bit i of the block's output half of
// c*x^j for j ranging over the block's input half.
func affineTab(t *[128]byte, c uint16) {
	cx := mulX(c)
	for blk := 0; blk < 4; blk++ {
		in, out := 8*(blk&1), 8*(blk>>1) // input and output byte of the block
		for i := 0; i < 8; i++ {
			var row byte
			for j := 0; j < 8; j++ {
				row |= byte(cx[in+j]>>(out+i)&1) << j
			}
			t[8*blk+7-i] = row
		}
	}
}
