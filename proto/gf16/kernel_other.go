//go:build !amd64

package gf16

// bestKernel: no SIMD kernel on this architecture.
const bestKernel = kernPortable

// kernelAvailable reports whether kernel kind k can run here.
func kernelAvailable(k uint8) bool { return k == kernPortable }

// kernelStep is 0: there is no SIMD kernel, so mulAddMulti leaves
// everything to the portable one and calls neither function below.
func kernelStep(k uint8) int { return 0 }

func buildTables(k uint8, t *tables, cs []uint16) {}

func runKernel(k uint8, dst []byte, srcs [][]byte, t *tables, start int) {}
