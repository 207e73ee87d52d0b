//go:build !amd64

package gf16

// bestKernel: no SIMD kernel on this architecture.
const bestKernel = kernPortable

// kernelAvailable reports whether kernel kind k can run here.
func kernelAvailable(k uint8) bool { return k == kernPortable }

// mulAddSIMD does nothing here; mulAddMulti leaves everything to the
// portable kernel.
func mulAddSIMD(k uint8, dst []byte, srcs [][]byte, cs []uint16) int { return 0 }
