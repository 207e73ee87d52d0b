package gf16

import (
	"math/rand/v2"
	"testing"
)

// mulSlow is the textbook product: shift-and-add of the carry-less
// product, reducing by Poly whenever bit 16 appears. It shares nothing
// with the log/exp tables it checks.
func mulSlow(a, b uint16) uint16 {
	var p uint32
	x := uint32(a)
	for i := 0; i < 16; i++ {
		if b&(1<<i) != 0 {
			p ^= x
		}
		x <<= 1
		if x&0x10000 != 0 {
			x ^= Poly
		}
	}
	return uint16(p)
}

func TestMulTable(t *testing.T) {
	tests := []struct {
		name    string
		a, b, p uint16
	}{
		{"zero absorbs", 0x1234, 0, 0},
		{"one is neutral", 0xbeef, 1, 0xbeef},
		{"x*x^15 = x^16 = x^12+x^3+x+1", 2, 0x8000, 0x100b},
		// x^30 = x^14*x^16 = x^26+x^17+x^15+x^14, reduced by hand
		// step by step to x^15+x^11+x^10+x^9+x^7+x^6+x^5+x^4+x^3+x.
		{"x^15*x^15 = x^30", 0x8000, 0x8000, 0x8efa},
		{"x*0x8001 wraps", 2, 0x8001, 0x100b ^ 2},
		{"commutes", 0x00ff, 0xff00, mulSlow(0xff00, 0x00ff)},
	}
	for _, tc := range tests {
		if got := Mul(tc.a, tc.b); got != tc.p {
			t.Errorf("%s: Mul(%#x, %#x) = %#x, want %#x", tc.name, tc.a, tc.b, got, tc.p)
		}
	}
	// The references agree on the hand-reduced x^30 too.
	if got := mulSlow(0x8000, 0x8000); got != 0x8efa {
		t.Errorf("mulSlow(x^15, x^15) = %#x, want 0x8efa", got)
	}
	if got := Pow(2, 30); got != 0x8efa {
		t.Errorf("Pow(2, 30) = %#x, want 0x8efa", got)
	}
}

func TestMulVsSlow(t *testing.T) {
	// Every a against a few b, and random pairs.
	for a := 0; a < 1<<16; a++ {
		for _, b := range []uint16{0, 1, 2, 3, 0x100b, 0x8000, 0xffff, uint16(a*40503 + 7)} {
			if got, want := Mul(uint16(a), b), mulSlow(uint16(a), b); got != want {
				t.Fatalf("Mul(%#x, %#x) = %#x, want %#x", a, b, got, want)
			}
		}
	}
}

func TestInv(t *testing.T) {
	for a := 1; a < 1<<16; a++ {
		if p := Mul(uint16(a), Inv(uint16(a))); p != 1 {
			t.Fatalf("a*Inv(a) = %#x for a = %#x, want 1", p, a)
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Inv(0) did not panic")
		}
	}()
	Inv(0)
}

func TestDistributive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		a, b, c := uint16(r.Uint32()), uint16(r.Uint32()), uint16(r.Uint32())
		if Mul(a, b^c) != Mul(a, b)^Mul(a, c) {
			t.Fatalf("a(b+c) != ab+ac for a=%#x b=%#x c=%#x", a, b, c)
		}
		if Mul(Mul(a, b), c) != Mul(a, Mul(b, c)) {
			t.Fatalf("(ab)c != a(bc) for a=%#x b=%#x c=%#x", a, b, c)
		}
	}
}

func TestPow(t *testing.T) {
	for _, a := range []uint16{0, 1, 2, 3, 0x100b, 0xffff, 0x8000} {
		p := uint16(1)
		for n := uint32(0); n < 70000; n++ {
			if got := Pow(a, n); got != p {
				t.Fatalf("Pow(%#x, %d) = %#x, want %#x (repeated Mul)", a, n, got, p)
			}
			p = Mul(p, a)
		}
	}
	if got := Pow(7, 1<<32-1); got != Pow(7, (1<<32-1)%Order) {
		t.Errorf("Pow(7, 2^32-1) = %#x, want Pow(7, (2^32-1) mod 65535)", got)
	}
}

// TestGeneratorOrder: 2 generates the multiplicative group, so its order
// is 65535 = 3*5*17*257 and no proper divisor.
func TestGeneratorOrder(t *testing.T) {
	if Pow(2, Order) != 1 {
		t.Fatalf("2^65535 = %#x, want 1", Pow(2, Order))
	}
	for _, p := range []uint32{3, 5, 17, 257} {
		if Pow(2, Order/p) == 1 {
			t.Errorf("2^(65535/%d) = 1: 2 is not a generator", p)
		}
	}
	seen := make([]bool, 1<<16)
	x := uint16(1)
	for i := 0; i < Order; i++ {
		if seen[x] {
			t.Fatalf("2^%d = %#x repeats an earlier power", i, x)
		}
		seen[x] = true
		x = mulSlow(x, 2)
	}
	if x != 1 {
		t.Fatalf("2^65535 by repeated doubling = %#x, want 1", x)
	}
}
