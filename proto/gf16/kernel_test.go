package gf16

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// refMulAdd is dst ^= c*src word by word through mulSlow.
func refMulAdd(dst, src []byte, c uint16) {
	for i := 0; i+1 < len(dst); i += 2 {
		p := mulSlow(uint16(src[i])|uint16(src[i+1])<<8, c)
		dst[i] ^= byte(p)
		dst[i+1] ^= byte(p >> 8)
	}
}

// kernels lists every kernel kind this CPU runs.
func kernels() []uint8 {
	var ks []uint8
	for k := range uint8(len(kernelNames)) {
		if kernelAvailable(k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// withKernel runs f with the package using kernel k.
func withKernel(k uint8, f func()) {
	saved := kernel
	kernel = k
	defer func() { kernel = saved }()
	f()
}

// guard is how many bytes around a destination must stay untouched.
const guard = 64

// checkMulAddMulti runs MulAddMulti with kernel k on a destination that
// starts dstOff bytes into a guarded buffer and compares it with the
// reference, guard bytes included.
func checkMulAddMulti(t *testing.T, k uint8, dst0 []byte, srcs [][]byte, cs []uint16, dstOff int) {
	t.Helper()
	n := len(dst0)
	buf := make([]byte, guard+dstOff+n+guard)
	for i := range buf {
		buf[i] = byte(i*7 + 3)
	}
	want := bytes.Clone(buf)
	copy(buf[guard+dstOff:], dst0)
	copy(want[guard+dstOff:], dst0)
	dst := buf[guard+dstOff : guard+dstOff+n : guard+dstOff+n]
	wdst := want[guard+dstOff : guard+dstOff+n]
	for i := range srcs {
		refMulAdd(wdst, srcs[i], cs[i])
	}
	withKernel(k, func() {
		if len(srcs) == 1 {
			MulAdd(dst, srcs[0], cs[0])
		} else {
			MulAddMulti(dst, srcs, cs)
		}
	})
	if !bytes.Equal(buf, want) {
		i := 0
		for buf[i] == want[i] {
			i++
		}
		t.Fatalf("kernel %s, %d bytes at offset %d, %d sources, cs %#x: first difference at byte %d of the buffer (dst starts at %d): got %#x, want %#x",
			kernelNames[k], n, dstOff, len(srcs), cs, i, guard+dstOff, buf[i], want[i])
	}
}

// randomSrc returns n random bytes starting off bytes into a fresh slice.
func randomSrc(r *rand.Rand, n, off int) []byte {
	b := make([]byte, n+off)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b[off:]
}

func TestKernelsMulAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lengths := []int{0, 2, 30, 62, 64, 66, 126, 128, 130, 192, 254, 256, 258,
		2*shortWords - 2, 2 * shortWords, 2*shortWords + 130, 4096, 4096 + 126, 65536}
	cs := []uint16{0, 1, 2, 3, 0x8000, 0xffff, 0x100b, uint16(r.Uint32()), uint16(r.Uint32())}
	for _, k := range kernels() {
		for _, n := range lengths {
			for _, c := range cs {
				for _, off := range []int{0, 1, 3} {
					src := randomSrc(r, n, off)
					dst := randomSrc(r, n, 0)
					checkMulAddMulti(t, k, dst, [][]byte{src}, []uint16{c}, off^1)
				}
			}
		}
	}
}

// TestKernelsWords: every 16-bit value of a source word, with constants
// that exercise every nibble table and every bit matrix.
func TestKernelsWords(t *testing.T) {
	src := make([]byte, 2<<16)
	for w := 0; w < 1<<16; w++ {
		src[2*w], src[2*w+1] = byte(w), byte(w>>8)
	}
	for _, k := range kernels() {
		for _, c := range []uint16{1, 2, 0x1234, 0x8000, 0xfedc, 0xffff} {
			checkMulAddMulti(t, k, make([]byte, len(src)), [][]byte{src}, []uint16{c}, 0)
		}
	}
}

// TestMulAddMultiVsMulAdd: MulAddMulti equals one MulAdd per source, for
// counts below, at and above the kernels' group of groupMax sources.
func TestMulAddMultiVsMulAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range kernels() {
		for _, nsrc := range []int{0, 1, 2, 3, groupMax - 1, groupMax, groupMax + 1, 2*groupMax + 3} {
			for _, n := range []int{0, 2, 64, 130, 256 + 64 + 2, 1024, 3000, blockBytes + 64 + 2, 2*blockBytes + 128} {
				srcs := make([][]byte, nsrc)
				cs := make([]uint16, nsrc)
				for i := range srcs {
					srcs[i] = randomSrc(r, n, i%3)
					cs[i] = uint16(r.Uint32())
				}
				if nsrc > 2 {
					cs[1] = 0
					cs[2] = 1
				}
				dst := randomSrc(r, n, 0)
				want := bytes.Clone(dst)
				withKernel(k, func() {
					for i := range srcs {
						MulAdd(want, srcs[i], cs[i])
					}
				})
				got := bytes.Clone(dst)
				withKernel(k, func() { MulAddMulti(got, srcs, cs) })
				if !bytes.Equal(got, want) {
					t.Fatalf("kernel %s, %d sources of %d bytes: MulAddMulti differs from repeated MulAdd", kernelNames[k], nsrc, n)
				}
				checkMulAddMulti(t, k, dst, srcs, cs, 1)
			}
		}
	}
}

// TestMulAddInPlace: MulAdd(x, x, c) sets x to (1+c)*x, as MulAdd's doc
// allows dst and src to be the same slice.
func TestMulAddInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, k := range kernels() {
		for _, n := range []int{2, 126, 128, 1024 + 66} {
			for _, c := range []uint16{1, 2, 0xffff, uint16(r.Uint32())} {
				x := randomSrc(r, n, 0)
				want := bytes.Clone(x)
				refMulAdd(want, bytes.Clone(x), c)
				withKernel(k, func() { MulAdd(x, x, c) })
				if !bytes.Equal(x, want) {
					t.Fatalf("kernel %s, %d bytes, c %#x: MulAdd(x, x, c) differs from x ^= c*x", kernelNames[k], n, c)
				}
			}
		}
	}
}

// TestNoAllocs: MulAdd, and MulAddMulti on one block (the tiled repair's
// calls), build their tables on the stack.
func TestNoAllocs(t *testing.T) {
	dst := make([]byte, blockBytes)
	srcs := make([][]byte, 3*groupMax+1)
	cs := make([]uint16, len(srcs))
	for i := range srcs {
		srcs[i] = make([]byte, len(dst))
		cs[i] = uint16(i + 2)
	}
	for _, k := range kernels() {
		withKernel(k, func() {
			if n := testing.AllocsPerRun(10, func() { MulAdd(dst, srcs[0], 7) }); n != 0 {
				t.Errorf("kernel %s: MulAdd allocates %v times", kernelNames[k], n)
			}
			if n := testing.AllocsPerRun(10, func() { MulAddMulti(dst, srcs, cs) }); n != 0 {
				t.Errorf("kernel %s: MulAddMulti on one block allocates %v times", kernelNames[k], n)
			}
		})
	}
}

func TestBadLengthsPanic(t *testing.T) {
	tests := []struct {
		name string
		f    func()
	}{
		{"MulAdd odd length", func() { MulAdd(make([]byte, 3), make([]byte, 3), 5) }},
		{"MulAdd unequal lengths", func() { MulAdd(make([]byte, 4), make([]byte, 6), 5) }},
		{"MulAddMulti odd length", func() { MulAddMulti(make([]byte, 3), [][]byte{make([]byte, 3)}, []uint16{5}) }},
		{"MulAddMulti short source", func() {
			MulAddMulti(make([]byte, 256), [][]byte{make([]byte, 256), make([]byte, 254)}, []uint16{5, 6})
		}},
		{"MulAddMulti more constants than sources", func() { MulAddMulti(make([]byte, 4), [][]byte{make([]byte, 4)}, []uint16{5, 6}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("no panic")
				}
			}()
			tc.f()
		})
	}
}

// FuzzGF16: every kernel this CPU runs agrees with the reference on
// MulAdd and MulAddMulti, for any data, any constants (0 and 1 included),
// any even length (so every tail), and sources and destination at any
// alignment.
func FuzzGF16(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4}, uint16(0), uint16(1), uint8(0), uint8(1))
	f.Add(bytes.Repeat([]byte{0xff, 0x80, 0x01}, 200), uint16(0x8000), uint16(0xffff), uint8(5), uint8(9))
	f.Fuzz(func(t *testing.T, data []byte, c0, c1 uint16, align, nsrc uint8) {
		ns := 1 + int(nsrc)%(groupMax+3)
		n := len(data) / 2 * 2
		srcs := make([][]byte, ns)
		cs := make([]uint16, ns)
		for i := range srcs {
			off := (int(align) + i) % 8
			s := make([]byte, n+off)[off:]
			for j := range s {
				s[j] = data[(j+i*7)%len(data)] ^ byte(i)
			}
			srcs[i] = s
			cs[i] = c0 ^ Mul(c1, uint16(i))
		}
		dst := make([]byte, n)
		for j := range dst {
			dst[j] = data[len(data)-1-j] ^ 0x5a
		}
		for _, k := range kernels() {
			checkMulAddMulti(t, k, dst, srcs[:1], cs[:1], int(align>>3)%8)
			checkMulAddMulti(t, k, dst, srcs, cs, int(align>>3)%8)
		}
	})
}

func ExampleMulAdd() {
	dst := []byte{0x00, 0x00, 0x01, 0x00}
	src := []byte{0x00, 0x80, 0x02, 0x00} // words 0x8000 and 2
	MulAdd(dst, src, 2)                   // x * x^15 = x^16 = 0x100b; 2*2 = 4
	fmt.Printf("% x\n", dst)
	// Output: 0b 10 05 00
}
