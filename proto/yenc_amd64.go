package proto

import "golang.org/x/sys/cpu"

// yencHaveKernel reports whether the AVX-512 kernel can run here: it needs
// AVX-512BW (byte compares into mask registers), AVX-512 VBMI2 (VPCOMPRESSB),
// and BMI1/BMI2 and POPCNT for the mask arithmetic.
var yencHaveKernel = cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI2 && cpu.X86.HasBMI1 &&
	cpu.X86.HasBMI2 && cpu.X86.HasPOPCNT

// yencDecodeAVX512 decodes whole 64-byte blocks of src into dst; see
// yencKernel. state bit 0 is a pending escape, bit 1 "the previous byte
// was a LF".
//
//go:noescape
func yencDecodeAVX512(dst, src []byte, state uint64) (n, w int, stateOut uint64)

// yencKernel decodes the data-line bytes at the start of src into dst, 64
// at a time, as long as each 64-byte block is plain: data bytes, escapes
// whose escaped byte is not "=", CR or LF, and line ends whose next line
// starts neither with "." nor with "=y". It stops before the first block
// that is not plain, that does not fit in dst, or that src does not hold
// whole, and leaves that to the scalar loop. It reports the bytes consumed
// and written, whether an escape is pending, and whether the last byte
// consumed was a LF (then the caller is at a line start).
func yencKernel(dst, src []byte, esc bool) (n, w int, escOut, lineStart bool) {
	var st uint64
	if esc {
		st = 1
	}
	n, w, st = yencDecodeAVX512(dst, src, st)
	return n, w, st&1 != 0, st&2 != 0
}
