package gf16

import "golang.org/x/sys/cpu"

// CPU features the kernels need. VPSHUFB, VPACKUSWB and the byte unpacks
// on 512-bit vectors are AVX512BW; GF2P8AFFINEQB on them is GFNI with
// AVX512F (x/sys/cpu reports GFNI as HasAVX512GFNI, and only when the CPU
// has AVX-512). CPUs with GFNI and AVX2 but no AVX-512 (Intel's Alder
// Lake and later desktop and laptop parts) run the VEX-encoded form on
// 256-bit vectors; x/sys/cpu does not report GFNI for them, so CPUID
// leaf 7 is asked directly (it exists wherever AVX2 is reported).
var (
	hasAVX2     = cpu.X86.HasAVX2
	hasAVX512   = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW
	hasGFNI     = hasAVX512 && cpu.X86.HasAVX512GFNI
	hasGFNIAVX2 = hasAVX2 && cpuid7ECX()&(1<<8) != 0
)

// cpuid7ECX returns ECX of CPUID leaf 7, subleaf 0.
func cpuid7ECX() uint32

// bestKernel is the fastest kernel this CPU runs.
var bestKernel = func() uint8 {
	switch {
	case hasGFNI:
		return kernGFNI
	case hasAVX512:
		return kernAVX512
	case hasGFNIAVX2:
		return kernGFNIAVX2
	case hasAVX2:
		return kernAVX2
	}
	return kernPortable
}()

// kernelAvailable reports whether kernel kind k can run here.
func kernelAvailable(k uint8) bool {
	switch k {
	case kernPortable:
		return true
	case kernAVX2:
		return hasAVX2
	case kernAVX512:
		return hasAVX512
	case kernGFNI:
		return hasGFNI
	case kernGFNIAVX2:
		return hasGFNIAVX2
	}
	return false
}

// mulAddAVX2, mulAddAVX512 and mulAddGFNI add tabs[i]'s constant times
// srcs[i] into dst for every i < len(srcs), over bytes start..len(dst) of
// dst and the sources; len(dst)-start must be a multiple of the kernel's
// step. Every source must be at least as long as dst; len(srcs) must be
// 1..groupMax.
//
//go:noescape
func mulAddAVX2(dst []byte, srcs [][]byte, tabs *tables, start int)

//go:noescape
func mulAddAVX512(dst []byte, srcs [][]byte, tabs *tables, start int)

//go:noescape
func mulAddGFNI(dst []byte, srcs [][]byte, tabs *tables, start int)

//go:noescape
func mulAddGFNIAVX2(dst []byte, srcs [][]byte, tabs *tables, start int)

// mulAdd1AVX2, mulAdd1AVX512 and mulAdd1GFNI are the kernels above for
// one source, with its tables kept in registers for the whole call.
//
//go:noescape
func mulAdd1AVX2(dst, src []byte, tab *[128]byte, start int)

//go:noescape
func mulAdd1AVX512(dst, src []byte, tab *[128]byte, start int)

//go:noescape
func mulAdd1GFNI(dst, src []byte, tab *[128]byte, start int)

//go:noescape
func mulAdd1GFNIAVX2(dst, src []byte, tab *[128]byte, start int)

// kernelStep is the bytes per step of kernel k, 0 for the portable one.
func kernelStep(k uint8) int {
	switch k {
	case kernAVX2, kernGFNIAVX2:
		return 64
	case kernAVX512, kernGFNI:
		return 128
	}
	return 0
}

// buildTables fills t with kernel k's tables for the constants cs.
func buildTables(k uint8, t *tables, cs []uint16) {
	for i, c := range cs {
		if k == kernGFNI || k == kernGFNIAVX2 {
			affineTab(&t[i], c)
		} else {
			nibbleTab(&t[i], c)
		}
	}
}

// runKernel runs SIMD kernel k; see mulAddAVX2.
func runKernel(k uint8, dst []byte, srcs [][]byte, t *tables, start int) {
	switch k {
	case kernAVX2:
		if len(srcs) == 1 {
			mulAdd1AVX2(dst, srcs[0], &t[0], start)
			return
		}
		mulAddAVX2(dst, srcs, t, start)
	case kernAVX512:
		if len(srcs) == 1 {
			mulAdd1AVX512(dst, srcs[0], &t[0], start)
			return
		}
		mulAddAVX512(dst, srcs, t, start)
	case kernGFNI:
		if len(srcs) == 1 {
			mulAdd1GFNI(dst, srcs[0], &t[0], start)
			return
		}
		mulAddGFNI(dst, srcs, t, start)
	case kernGFNIAVX2:
		if len(srcs) == 1 {
			mulAdd1GFNIAVX2(dst, srcs[0], &t[0], start)
			return
		}
		mulAddGFNIAVX2(dst, srcs, t, start)
	}
}
