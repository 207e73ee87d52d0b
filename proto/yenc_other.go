//go:build !amd64

package proto

// yencBestKernel: no SIMD kernel for yEnc data lines on this architecture;
// the scalar loop decodes everything.
const yencBestKernel = kernScalar

// yencKernelAvailable reports whether kernel kind k can run here.
func yencKernelAvailable(k uint8) bool { return k == kernScalar }

// yencKernel is the portable stand-in for the SIMD kernels: it declines
// every block, so the caller's scalar loop does the work.
func yencKernel(kind uint8, dst, src []byte, esc bool) (n, w int, escOut, lineStart bool) {
	return 0, 0, esc, false
}
