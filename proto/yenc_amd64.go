package proto

import "golang.org/x/sys/cpu"

// The kernels need, besides their vector extension, BMI1/BMI2 and POPCNT
// for the mask arithmetic. AVX-512 needs BW (byte compares into mask
// registers) and VBMI2 (VPCOMPRESSB).
var (
	yencHasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasBMI1 && cpu.X86.HasBMI2 && cpu.X86.HasPOPCNT
	yencHasAVX512 = yencHasAVX2 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI2
)

// yencBestKernel is the fastest kernel this CPU runs.
var yencBestKernel = func() uint8 {
	switch {
	case yencHasAVX512:
		return kernAVX512
	case yencHasAVX2:
		return kernAVX2
	}
	return kernScalar
}()

// yencKernelAvailable reports whether kernel kind k can run here.
func yencKernelAvailable(k uint8) bool {
	switch k {
	case kernScalar, kernAuto:
		return true
	case kernAVX2:
		return yencHasAVX2
	case kernAVX512:
		return yencHasAVX512
	}
	return false
}

// yencDecodeAVX512 and yencDecodeAVX2 decode whole 64- or 32-byte blocks
// of src into dst; see yencKernel. state bit 0 is a pending escape, bit 1
// "the previous byte was a LF".
//
//go:noescape
func yencDecodeAVX512(dst, src []byte, state uint64) (n, w int, stateOut uint64)

//go:noescape
func yencDecodeAVX2(dst, src []byte, state uint64) (n, w int, stateOut uint64)

// yencShufTab[m] is the PSHUFB control that packs the bytes of an 8-byte
// group whose bits are set in m to the front (the rest are zeroed). The
// AVX2 kernel squeezes out "=", CR and LF with it.
var yencShufTab = func() (t [256]uint64) {
	for m := range t {
		var ctl uint64 = 0x8080808080808080
		k := 0
		for b := 0; b < 8; b++ {
			if m&(1<<b) != 0 {
				ctl &^= 0xff << (8 * k)
				ctl |= uint64(b) << (8 * k)
				k++
			}
		}
		t[m] = ctl
	}
	return t
}()

// yencAVX2Consts: [0] the bit of each byte's position within its 8-byte
// group, [1] the PSHUFB control that copies byte i/8 of a broadcast 32-bit
// mask to byte i. Together they turn a bit mask into a byte mask.
var yencAVX2Consts = [2][32]byte{
	{1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128},
	{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
}

// yencKernel decodes the data-line bytes at the start of src into dst, a
// block at a time, as long as each block is plain: data bytes, escapes
// whose escaped byte is not "=", CR or LF, and line ends whose next line
// starts neither with "." nor with "=y". It stops before the first block
// that is not plain, that might not fit in dst, or that src does not hold
// whole, and leaves that to the scalar loop. It reports the bytes consumed
// and written, whether an escape is pending, and whether the last byte
// consumed was a LF (then the caller is at a line start). It changes no
// byte outside dst[:w] (the AVX2 kernel may rewrite up to 8 bytes after
// them with their own values), and none of src beyond what it consumed,
// so dst may overlap src as long as it starts no later.
func yencKernel(kind uint8, dst, src []byte, esc bool) (n, w int, escOut, lineStart bool) {
	var st uint64
	if esc {
		st = 1
	}
	switch kind {
	case kernAVX512:
		n, w, st = yencDecodeAVX512(dst, src, st)
	case kernAVX2:
		n, w, st = yencDecodeAVX2(dst, src, st)
	}
	return n, w, st&1 != 0, st&2 != 0
}
