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

// BenchmarkMulAddMultiTile: 64 sources into a 16 KiB dst, the shape of a
// repair that tiles its slices so the sources' tiles stay in cache; bytes
// are source bytes processed. It includes building 64 constants' tables.
func BenchmarkMulAddMultiTile(b *testing.B) {
	const n, nsrc = 16 << 10, 64
	for _, k := range kernels() {
		b.Run(kernelNames[k], func(b *testing.B) {
			dst := make([]byte, n)
			srcs := make([][]byte, nsrc)
			cs := make([]uint16, nsrc)
			for i := range srcs {
				srcs[i] = make([]byte, n)
				for j := range srcs[i] {
					srcs[i][j] = byte(j*13 + i)
				}
				cs[i] = Pow(2, uint32(i+1))
			}
			b.SetBytes(n * nsrc)
			withKernel(k, func() {
				for b.Loop() {
					MulAddMulti(dst, srcs, cs)
				}
			})
		})
	}
}

// BenchmarkTables: building one constant's tables, per kernel family.
func BenchmarkTables(b *testing.B) {
	var t [128]byte
	b.Run("nibble", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			nibbleTab(&t, uint16(i))
		}
	})
	b.Run("affine", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			affineTab(&t, uint16(i))
		}
	})
}

func BenchmarkMul(b *testing.B) {
	x := uint16(1)
	for b.Loop() {
		x = Mul(x, 0x1234) ^ 1
	}
	sink = x
}

var sink uint16
