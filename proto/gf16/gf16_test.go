package gf16

import (
	"encoding/binary"
	"testing"
)

// slowMul multiplies by shift and add, reducing by Poly: the definition.
func slowMul(a, b uint16) uint16 {
	var p uint32
	x, y := uint32(a), uint32(b)
	for y != 0 {
		if y&1 != 0 {
			p ^= x
		}
		y >>= 1
		x <<= 1
		if x&0x10000 != 0 {
			x ^= Poly
		}
	}
	return uint16(p)
}

func TestMulAgreesWithDefinition(t *testing.T) {
	for _, c := range [][2]uint16{{0, 5}, {1, 0xffff}, {2, 0x8000}, {0x1234, 0xabcd}, {0xffff, 0xffff}, {3, 7}} {
		if got, want := Mul(c[0], c[1]), slowMul(c[0], c[1]); got != want {
			t.Errorf("Mul(%#x, %#x) = %#x, want %#x", c[0], c[1], got, want)
		}
	}
}

func TestInvPow(t *testing.T) {
	for a := 1; a < 1<<16; a += 97 {
		if got := Mul(uint16(a), Inv(uint16(a))); got != 1 {
			t.Fatalf("a*Inv(a) = %#x for a = %#x", got, a)
		}
	}
	// 2 is primitive: 2^65535 = 1, 2^n != 1 for the maximal divisors.
	if Pow(2, Order) != 1 || Pow(2, Order/3) == 1 || Pow(2, Order/5) == 1 || Pow(2, Order/17) == 1 || Pow(2, Order/257) == 1 {
		t.Fatal("2 is not primitive")
	}
	if got, want := Pow(0x1234, 3), Mul(0x1234, Mul(0x1234, 0x1234)); got != want {
		t.Fatalf("Pow = %#x, want %#x", got, want)
	}
}

func FuzzMulAdd(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, uint16(0x1234))
	f.Add([]byte{0xff, 0xff}, uint16(0xffff))
	f.Fuzz(func(t *testing.T, src []byte, c uint16) {
		src = src[:len(src)&^1]
		dst := make([]byte, len(src))
		for i := range dst {
			dst[i] = byte(i * 7)
		}
		want := append([]byte(nil), dst...)
		for i := 0; i < len(src); i += 2 {
			w := slowMul(c, binary.LittleEndian.Uint16(src[i:]))
			binary.LittleEndian.PutUint16(want[i:], binary.LittleEndian.Uint16(want[i:])^w)
		}
		MulAdd(dst, src, c)
		if string(dst) != string(want) {
			t.Fatalf("MulAdd(c=%#x) differs from the definition", c)
		}
	})
}
