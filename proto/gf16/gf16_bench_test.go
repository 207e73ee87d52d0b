package gf16

import (
	"fmt"
	"testing"
)

// BenchmarkMulAdd: one source into dst, per kernel, at 64 KiB and 1 MiB.
// Bytes are source bytes processed.
func BenchmarkMulAdd(b *testing.B) {
	for _, k := range kernels() {
		for _, n := range []int{64 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("%s/%dKiB", kernelNames[k], n>>10), func(b *testing.B) {
				dst, src := make([]byte, n), make([]byte, n)
				for i := range src {
					src[i] = byte(i * 13)
				}
				b.SetBytes(int64(n))
				withKernel(k, func() {
					for b.Loop() {
						MulAdd(dst, src, 0x1234)
					}
				})
			})
		}
	}
}

// BenchmarkMulAddMulti: groupMax sources into dst, per kernel; bytes are
// source bytes processed (groupMax times the slice size).
func BenchmarkMulAddMulti(b *testing.B) {
	for _, k := range kernels() {
		for _, n := range []int{64 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("%s/%dKiB", kernelNames[k], n>>10), func(b *testing.B) {
				dst := make([]byte, n)
				srcs := make([][]byte, groupMax)
				cs := make([]uint16, groupMax)
				for i := range srcs {
					srcs[i] = make([]byte, n)
					for j := range srcs[i] {
						srcs[i][j] = byte(j*13 + i)
					}
					cs[i] = Pow(2, uint32(i+1))
				}
				b.SetBytes(int64(n * groupMax))
				withKernel(k, func() {
					for b.Loop() {
						MulAddMulti(dst, srcs, cs)
					}
				})
			})
		}
	}
}

func BenchmarkMul(b *testing.B) {
	x := uint16(1)
	for b.Loop() {
		x = Mul(x, 0x1234) ^ 1
	}
	sink = x
}

var sink uint16
