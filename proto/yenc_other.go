//go:build !amd64

package proto

// yencHaveKernel reports whether a SIMD kernel for yEnc data lines exists on
// this architecture. Without one the scalar loop decodes everything.
const yencHaveKernel = false

// yencKernel is the portable stand-in for the SIMD kernel: it declines every
// block, so the caller's scalar loop does the work.
func yencKernel(dst, src []byte, esc bool) (n, w int, escOut, lineStart bool) {
	return 0, 0, esc, false
}
