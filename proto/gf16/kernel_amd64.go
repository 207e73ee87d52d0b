package gf16

import "golang.org/x/sys/cpu"

// CPU features the kernels need. VPSHUFB, VPACKUSWB and the byte unpacks
// on 512-bit vectors are AVX512BW; GF2P8AFFINEQB on them is GFNI with
// AVX512F (x/sys/cpu reports GFNI as HasAVX512GFNI).
var (
	hasAVX2   = cpu.X86.HasAVX2
	hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW
	hasGFNI   = hasAVX512 && cpu.X86.HasAVX512GFNI
)

// bestKernel is the fastest kernel this CPU runs.
var bestKernel = func() uint8 {
	switch {
	case hasGFNI:
		return kernGFNI
	case hasAVX512:
		return kernAVX512
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
	}
	return false
}

// tables holds the per-constant tables of one kernel call: for the
// VPSHUFB kernels nibbleTab's 128 bytes, for GFNI affineTab's 32.
type tables [groupMax][128]byte

// mulAddAVX2, mulAddAVX512 and mulAddGFNI add tabs[i]'s constant times
// srcs[i] into dst for every i < len(srcs), over the first len(dst) bytes,
// which must be a multiple of 64 (AVX2) or 128 (the others). Every source
// must be at least as long as dst; len(srcs) must be 1..groupMax.
//
//go:noescape
func mulAddAVX2(dst []byte, srcs [][]byte, tabs *tables)

//go:noescape
func mulAddAVX512(dst []byte, srcs [][]byte, tabs *tables)

//go:noescape
func mulAddGFNI(dst []byte, srcs [][]byte, tabs *tables)

// mulAddSIMD runs kernel k on the longest prefix of dst it handles whole
// and returns that prefix's length; the caller does the rest.
func mulAddSIMD(k uint8, dst []byte, srcs [][]byte, cs []uint16) int {
	var tabs tables
	switch k {
	case kernAVX2:
		n := len(dst) &^ 63
		if n == 0 {
			return 0
		}
		for i, c := range cs {
			nibbleTab(&tabs[i], c)
		}
		mulAddAVX2(dst[:n], srcs, &tabs)
		return n
	case kernAVX512, kernGFNI:
		n := len(dst) &^ 127
		if n == 0 {
			return 0
		}
		if k == kernGFNI {
			for i, c := range cs {
				affineTab(&tabs[i], c)
			}
			mulAddGFNI(dst[:n], srcs, &tabs)
			return n
		}
		for i, c := range cs {
			nibbleTab(&tabs[i], c)
		}
		mulAddAVX512(dst[:n], srcs, &tabs)
		return n
	}
	return 0
}
