// Package gf16 is arithmetic in GF(2^16) with PAR 2.0's generator 0x1100B.
//
// # Theory of operation
//
// An element is a uint16 read as a polynomial over GF(2) of degree < 16;
// addition is XOR and multiplication is polynomial multiplication modulo
// x^16 + x^12 + x^3 + x + 1 (0x1100B), the field PAR 2.0 (§"Reed-Solomon")
// computes recovery data in. The element 2 (the polynomial x) generates
// the multiplicative group, of order 65535, so every nonzero a is 2^log(a)
// and the scalar operations Mul, Inv and Pow are lookups in a log table
// and an exp table built once at start (384 KiB). They are the reference
// every kernel below is tested against.
//
// The bulk operations MulAdd and MulAddMulti multiply whole slices, read as
// little-endian 16-bit words (PAR 2.0's layout), by a constant and add
// (XOR) the products into a destination. Multiplication by a constant c is
// linear over GF(2), so c*w is the XOR of c times each 4-bit nibble of w in
// its place: four tables of 16 products, each product split into its low
// and high byte, make eight 16-byte tables per constant (split tables).
// The kernels, chosen once at start from the CPU's features:
//
//   - AVX-512 (AVX512F+AVX512BW): 128 bytes (64 words) per step. Two
//     vectors are split into a vector of low bytes and one of high bytes
//     (AND/shift and VPACKUSWB), the four nibbles of each word are looked
//     up with VPSHUFB in the eight tables (broadcast to every 128-bit
//     lane), the partial products are XORed (VPTERNLOGD) into accumulators,
//     and VPUNPCKLBW/VPUNPCKHBW put low and high bytes back into words,
//     which undoes the VPACKUSWB lane order exactly.
//   - AVX2: the same on 32-byte vectors, 64 bytes per step.
//   - GFNI (AVX-512 with GF2P8AFFINEQB): the 16x16 bit matrix of
//     "multiply by c" as four 8x8 blocks, low and high bytes split as above,
//     four affine transforms per 128 bytes instead of eight lookups.
//   - GFNI on AVX2 (VEX-encoded GF2P8AFFINEQB; Intel CPUs since Alder
//     Lake that have GFNI but no AVX-512): the same, 64 bytes per step.
//   - portable: two 256-entry tables per constant (products of c with every
//     low byte and every high byte), words read 4 at a time as uint64; for
//     short slices, where building the tables costs more than it saves,
//     log/exp per word.
//
// MulAddMulti keeps the destination's accumulators in registers while it
// adds up to 8 sources into them, so the destination is read and written
// once per 8 sources instead of once per source; with more than 8 sources
// it works through dst in 16 KiB blocks, which stay in L1 while every
// group is added. MulAdd, and a group of one, runs a variant that holds
// the constant's tables in registers for the whole call. The tables cost
// two lookups per constant (they are linear in the constant: those of its
// low byte XOR those of its high byte, from tables built at start), since
// callers that tile their work build them on every call. A kernel handles
// whole steps; the tail (length not a multiple of the step) goes to the
// portable code.
//
// Speed on the development machine (Intel Xeon @ 2.80GHz, Ice Lake
// server: 48 KiB L1d, 1.25 MiB L2 per core; AVX-512 and GFNI), one core,
// `go test ./proto/gf16 -run '^$' -bench . -cpu 1`, in GB/s of source
// bytes. The machine was shared (load 10 to 17 on its 2 cores), so these
// are the best of 3 batches of 3 to 7 runs of 200 iterations; single
// runs came out up to 3 times lower, most of all where the data fill L2:
//
//	kernel    MulAdd 64 KiB  1 MiB   MulAddMulti 8x64 KiB  8x1 MiB  64x16 KiB
//	portable       1.9        0.9          1.3               0.9       0.8
//	avx2          17.9        7.7         13.7               8.8      13.5
//	gfniavx2      29.9        6.7         25.2              13.7      25.9
//	avx512        29.0        9.7         28.7              17.4      26.5
//	gfni          45.5        9.3         49.5              20.7      45.6
//
// At 1 MiB the slices no longer fit in L2 and memory sets the pace. The
// last column is the shape of a repair that tiles its slices (64 sources
// into a 16 KiB destination, tables built on every call).
package gf16

import "fmt"

// Poly is the field's reduction polynomial x^16 + x^12 + x^3 + x + 1.
const Poly = 0x1100B

// Order is the size of the multiplicative group (the nonzero elements),
// 2^16-1; the powers of the generator 2 repeat with this period.
const Order = 65535

// logTab[a] is the discrete logarithm of a != 0 to base 2; expTab[i] is
// 2^i for 0 <= i < 2*Order, so a sum of two logarithms needs no reduction.
var (
	logTab [1 << 16]uint16
	expTab [2 * Order]uint16
)

func init() {
	x := uint32(1)
	for i := 0; i < Order; i++ {
		expTab[i] = uint16(x)
		expTab[i+Order] = uint16(x)
		logTab[x] = uint16(i)
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
	return expTab[int(logTab[a])+int(logTab[b])]
}

// Inv returns the multiplicative inverse of a, which must not be 0 (Inv
// panics on 0, as integer division does).
func Inv(a uint16) uint16 {
	if a == 0 {
		panic("gf16: Inv(0)")
	}
	return expTab[Order-int(logTab[a])]
}

// Pow returns a to the n-th power; Pow(a, 0) is 1 for every a, 0 included.
func Pow(a uint16, n uint32) uint16 {
	if n == 0 {
		return 1
	}
	if a == 0 {
		return 0
	}
	return expTab[uint64(logTab[a])*uint64(n)%Order]
}

// MulAdd sets dst ^= c*src, word by word, reading both as little-endian
// 16-bit words. len(dst) must equal len(src) and be even; MulAdd panics
// otherwise. The slices may not overlap unless they are the same.
func MulAdd(dst, src []byte, c uint16) {
	if len(dst) != len(src) || len(dst)%2 != 0 {
		panic(fmt.Sprintf("gf16: MulAdd of %d bytes into %d (want equal, even lengths)", len(src), len(dst)))
	}
	if c == 0 || len(dst) == 0 {
		return
	}
	mulAddMulti(kernel, dst, [][]byte{src}, []uint16{c})
}

// MulAddMulti sets dst ^= cs[0]*srcs[0] ^ cs[1]*srcs[1] ^ ..., word by
// word as MulAdd does. Every source must be as long as dst, the length
// must be even, and len(cs) must equal len(srcs); MulAddMulti panics
// otherwise. dst must not overlap any source. It is faster than one
// MulAdd per source because the kernels keep dst in registers across
// several sources.
func MulAddMulti(dst []byte, srcs [][]byte, cs []uint16) {
	if len(srcs) != len(cs) {
		panic(fmt.Sprintf("gf16: MulAddMulti with %d sources and %d constants", len(srcs), len(cs)))
	}
	if len(dst)%2 != 0 {
		panic(fmt.Sprintf("gf16: MulAddMulti into %d bytes (want an even length)", len(dst)))
	}
	for i, s := range srcs {
		if len(s) != len(dst) {
			panic(fmt.Sprintf("gf16: MulAddMulti source %d has %d bytes, dst %d", i, len(s), len(dst)))
		}
	}
	if len(dst) == 0 || len(srcs) == 0 {
		return
	}
	mulAddMulti(kernel, dst, srcs, cs)
}

// Kernel kinds. kernel is the one the package uses, the best this CPU
// runs; tests set it to each kind kernelAvailable reports.
const (
	kernPortable uint8 = iota
	kernAVX2
	kernAVX512
	kernGFNI
	kernGFNIAVX2
)

var kernelNames = [...]string{"portable", "avx2", "avx512", "gfni", "gfniavx2"}

var kernel = bestKernel

// tables holds the per-constant tables of one kernel call: for the
// VPSHUFB kernels nibbleTab's 128 bytes, for GFNI affineTab's 32.
type tables [groupMax][128]byte

// groupMax is the most sources one kernel call adds into dst.
const groupMax = 8

// blockBytes is how much of dst MulAddMulti works on at a time when it
// has more than groupMax sources: the block stays in L1 cache while every
// group of sources is added into it, so dst crosses the memory bus once.
const blockBytes = 16 << 10

// mulAddMulti is MulAddMulti with checked arguments (at least one
// source) on kernel kind k. The SIMD kernel takes the longest prefix it
// handles in whole steps, block by block and, within a block, group by
// group; the portable code the tail. With one block (the common case for
// callers that tile their work) each group's tables are built on the
// stack just before its kernel call; with several, all are built once.
func mulAddMulti(k uint8, dst []byte, srcs [][]byte, cs []uint16) {
	nvec := 0
	if step := kernelStep(k); step > 0 {
		nvec = len(dst) / step * step
	}
	group := func(g int) ([][]byte, []uint16) {
		hi := min((g+1)*groupMax, len(srcs))
		return srcs[g*groupMax : hi], cs[g*groupMax : hi]
	}
	ngroups := (len(srcs) + groupMax - 1) / groupMax
	switch {
	case nvec == 0:
	case ngroups == 1 || nvec <= blockBytes:
		var t tables
		for g := range ngroups {
			ss, gcs := group(g)
			buildTables(k, &t, gcs)
			runKernel(k, dst[:nvec], ss, &t, 0)
		}
	default:
		ts := make([]tables, ngroups)
		for g := range ts {
			_, gcs := group(g)
			buildTables(k, &ts[g], gcs)
		}
		for off := 0; off < nvec; off += blockBytes {
			end := min(off+blockBytes, nvec)
			for g := range ts {
				ss, _ := group(g)
				runKernel(k, dst[:end], ss, &ts[g], off)
			}
		}
	}
	if nvec < len(dst) {
		mulAddPortable(dst[nvec:], srcs, cs, nvec)
	}
}
