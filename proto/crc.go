package proto

// CRC32Combine returns the CRC-32 (IEEE, as hash/crc32.ChecksumIEEE) of the
// concatenation A+B, given crc1 of A, crc2 of B and len2, the length of B.
// newsget uses it to check a whole file against =yend crc32= from the
// pcrc32 values of its parts, without reading the file again.
//
// Method (the one zlib's crc32_combine uses): appending len2 zero bytes to A
// maps its CRC through a linear operator over GF(2), a 32x32 bit matrix.
// The operator for one zero bit is built from the polynomial; squaring it
// repeatedly gives the operators for 2, 4, 8, ... zero bits, and those for
// the set bits of len2*8 are applied in turn. Then crc(A+B) is that shifted
// crc1 xor crc2: the register's initial value and the final inversion are
// both 0xffffffff, so their images under the operator cancel in the sum.
func CRC32Combine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1
	}
	var odd, even crc32Matrix
	// Operator for one zero bit: the reflected register shifts right by one
	// and, when the bit shifted out was 1, is xored with the polynomial.
	odd[0] = 0xedb88320
	for n, row := 1, uint32(1); n < 32; n, row = n+1, row<<1 {
		odd[n] = row
	}
	even.square(&odd) // two zero bits
	odd.square(&even) // four zero bits

	// Each pass squares the operator (8, 16, 32, ... zero bits, that is
	// 1, 2, 4, ... zero bytes) and applies it when the matching bit of
	// len2 is set.
	for {
		even.square(&odd)
		if len2&1 != 0 {
			crc1 = even.times(crc1)
		}
		len2 >>= 1
		if len2 == 0 {
			break
		}
		odd.square(&even)
		if len2&1 != 0 {
			crc1 = odd.times(crc1)
		}
		len2 >>= 1
		if len2 == 0 {
			break
		}
	}
	return crc1 ^ crc2
}

// crc32Matrix is a 32x32 matrix over GF(2): column n is the image of bit n.
type crc32Matrix [32]uint32

// times returns m applied to vector v.
func (m *crc32Matrix) times(v uint32) uint32 {
	var sum uint32
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			sum ^= m[i]
		}
	}
	return sum
}

// square sets m to a*a.
func (m *crc32Matrix) square(a *crc32Matrix) {
	for n := range m {
		m[n] = a.times(a[n])
	}
}
