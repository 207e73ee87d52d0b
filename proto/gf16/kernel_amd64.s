//go:build amd64

#include "textflag.h"

// The three kernels share one shape. For each step of the destination
// (64 bytes for AVX2, 128 for the others) the accumulators L (low bytes)
// and H (high bytes) start at zero; for each source the step's bytes are
// loaded as two vectors A and B of words and split into
//   lo = VPACKUSWB(A & 0x00ff, B & 0x00ff), hi = VPACKUSWB(A >> 8, B >> 8)
// (per 128-bit lane: 8 words of A, then 8 of B), the products c*word are
// XORed into L and H, and after the last source VPUNPCKLBW(L, H) and
// VPUNPCKHBW(L, H) are A's and B's words of the sum again, in order,
// since the unpacks undo the packs lane by lane. They are XORed into dst.
//
// The kernels start at byte start of dst and the sources and stop at
// len(dst).
//
// Registers: DI dst, CX its length, SI the sources' slice headers (24
// bytes each; only the base pointer is read), R8 the number of sources,
// R9 the tables (128 bytes per source), R10 the step's offset, R11 sources
// left, R12 this source's header, R13 its tables, AX its base.
//
// The VPSHUFB kernels look the four nibbles of each word up in its eight
// 16-byte tables (see nibbleTab), broadcast to every 128-bit lane:
//   n0 = lo & 15, n1 = lo >> 4, n2 = hi & 15, n3 = hi >> 4
//   L ^= T0lo[n0] ^ T1lo[n1] ^ T2lo[n2] ^ T3lo[n3], H likewise with Tkhi.

// func mulAddAVX2(dst []byte, srcs [][]byte, tabs *tables, start int)
TEXT ·mulAddAVX2(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ srcs_base+24(FP), SI
	MOVQ srcs_len+32(FP), R8
	MOVQ tabs+48(FP), R9
	MOVQ start+56(FP), R10
	MOVL $0x0f0f0f0f, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x00ff00ff, AX
	MOVQ AX, X14
	VPBROADCASTD X14, Y14

avx2step:
	CMPQ R10, CX
	JAE  avx2done
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	MOVQ SI, R12
	MOVQ R9, R13
	MOVQ R8, R11

avx2src:
	MOVQ    (R12), AX
	VMOVDQU (AX)(R10*1), Y2
	VMOVDQU 32(AX)(R10*1), Y3
	VPSRLW  $8, Y2, Y4
	VPSRLW  $8, Y3, Y5
	VPAND   Y14, Y2, Y2
	VPAND   Y14, Y3, Y3
	VPACKUSWB Y3, Y2, Y2 // lo
	VPACKUSWB Y5, Y4, Y4 // hi
	VPSRLW  $4, Y2, Y3
	VPSRLW  $4, Y4, Y5
	VPAND   Y15, Y2, Y2 // n0
	VPAND   Y15, Y3, Y3 // n1
	VPAND   Y15, Y4, Y4 // n2
	VPAND   Y15, Y5, Y5 // n3

	VBROADCASTI128 0(R13), Y6
	VBROADCASTI128 16(R13), Y7
	VBROADCASTI128 32(R13), Y8
	VBROADCASTI128 48(R13), Y9
	VPSHUFB Y2, Y6, Y6
	VPSHUFB Y2, Y7, Y7
	VPSHUFB Y3, Y8, Y8
	VPSHUFB Y3, Y9, Y9
	VPXOR   Y6, Y0, Y0
	VPXOR   Y7, Y1, Y1
	VPXOR   Y8, Y0, Y0
	VPXOR   Y9, Y1, Y1

	VBROADCASTI128 64(R13), Y10
	VBROADCASTI128 80(R13), Y11
	VBROADCASTI128 96(R13), Y12
	VBROADCASTI128 112(R13), Y13
	VPSHUFB Y4, Y10, Y10
	VPSHUFB Y4, Y11, Y11
	VPSHUFB Y5, Y12, Y12
	VPSHUFB Y5, Y13, Y13
	VPXOR   Y10, Y0, Y0
	VPXOR   Y11, Y1, Y1
	VPXOR   Y12, Y0, Y0
	VPXOR   Y13, Y1, Y1

	ADDQ $24, R12
	ADDQ $128, R13
	DECQ R11
	JNZ  avx2src

	VPUNPCKLBW Y1, Y0, Y2
	VPUNPCKHBW Y1, Y0, Y3
	VPXOR      (DI)(R10*1), Y2, Y2
	VPXOR      32(DI)(R10*1), Y3, Y3
	VMOVDQU    Y2, (DI)(R10*1)
	VMOVDQU    Y3, 32(DI)(R10*1)
	ADDQ       $64, R10
	JMP        avx2step

avx2done:
	VZEROUPPER
	RET

// func mulAddAVX512(dst []byte, srcs [][]byte, tabs *tables, start int)
//
// As mulAddAVX2 on 64-byte vectors; VPTERNLOGD $0x96 is a three-way XOR.
TEXT ·mulAddAVX512(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ srcs_base+24(FP), SI
	MOVQ srcs_len+32(FP), R8
	MOVQ tabs+48(FP), R9
	MOVQ start+56(FP), R10
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL $0x00ff00ff, AX
	VPBROADCASTD AX, Z14

z512step:
	CMPQ R10, CX
	JAE  z512done
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	MOVQ SI, R12
	MOVQ R9, R13
	MOVQ R8, R11

z512src:
	MOVQ      (R12), AX
	VMOVDQU64 (AX)(R10*1), Z2
	VMOVDQU64 64(AX)(R10*1), Z3
	VPSRLW    $8, Z2, Z4
	VPSRLW    $8, Z3, Z5
	VPANDD    Z14, Z2, Z2
	VPANDD    Z14, Z3, Z3
	VPACKUSWB Z3, Z2, Z2 // lo
	VPACKUSWB Z5, Z4, Z4 // hi
	VPSRLW    $4, Z2, Z3
	VPSRLW    $4, Z4, Z5
	VPANDD    Z15, Z2, Z2 // n0
	VPANDD    Z15, Z3, Z3 // n1
	VPANDD    Z15, Z4, Z4 // n2
	VPANDD    Z15, Z5, Z5 // n3

	VBROADCASTI32X4 0(R13), Z6
	VBROADCASTI32X4 16(R13), Z7
	VBROADCASTI32X4 32(R13), Z8
	VBROADCASTI32X4 48(R13), Z9
	VBROADCASTI32X4 64(R13), Z10
	VBROADCASTI32X4 80(R13), Z11
	VBROADCASTI32X4 96(R13), Z12
	VBROADCASTI32X4 112(R13), Z13
	VPSHUFB    Z2, Z6, Z6
	VPSHUFB    Z2, Z7, Z7
	VPSHUFB    Z3, Z8, Z8
	VPSHUFB    Z3, Z9, Z9
	VPSHUFB    Z4, Z10, Z10
	VPSHUFB    Z4, Z11, Z11
	VPSHUFB    Z5, Z12, Z12
	VPSHUFB    Z5, Z13, Z13
	VPTERNLOGD $0x96, Z8, Z6, Z0
	VPTERNLOGD $0x96, Z9, Z7, Z1
	VPTERNLOGD $0x96, Z12, Z10, Z0
	VPTERNLOGD $0x96, Z13, Z11, Z1

	ADDQ $24, R12
	ADDQ $128, R13
	DECQ R11
	JNZ  z512src

	VPUNPCKLBW Z1, Z0, Z2
	VPUNPCKHBW Z1, Z0, Z3
	VPXORD     (DI)(R10*1), Z2, Z2
	VPXORD     64(DI)(R10*1), Z3, Z3
	VMOVDQU64  Z2, (DI)(R10*1)
	VMOVDQU64  Z3, 64(DI)(R10*1)
	ADDQ       $128, R10
	JMP        z512step

z512done:
	VZEROUPPER
	RET

// func mulAddGFNI(dst []byte, srcs [][]byte, tabs *tables, start int)
//
// As mulAddAVX512, but the products come from GF2P8AFFINEQB with the four
// bit matrices of affineTab, each broadcast from memory to every qword:
//   L ^= Mll*lo ^ Mhl*hi, H ^= Mlh*lo ^ Mhh*hi
// (Mxy takes byte x of the input word to byte y of the product.)
TEXT ·mulAddGFNI(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ srcs_base+24(FP), SI
	MOVQ srcs_len+32(FP), R8
	MOVQ tabs+48(FP), R9
	MOVQ start+56(FP), R10
	MOVL $0x00ff00ff, AX
	VPBROADCASTD AX, Z14

gfnistep:
	CMPQ R10, CX
	JAE  gfnidone
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	MOVQ SI, R12
	MOVQ R9, R13
	MOVQ R8, R11

gfnisrc:
	MOVQ      (R12), AX
	VMOVDQU64 (AX)(R10*1), Z2
	VMOVDQU64 64(AX)(R10*1), Z3
	VPSRLW    $8, Z2, Z4
	VPSRLW    $8, Z3, Z5
	VPANDD    Z14, Z2, Z2
	VPANDD    Z14, Z3, Z3
	VPACKUSWB Z3, Z2, Z2 // lo
	VPACKUSWB Z5, Z4, Z4 // hi

	VGF2P8AFFINEQB.BCST $0, 0(R13), Z2, Z6  // Mll*lo
	VGF2P8AFFINEQB.BCST $0, 8(R13), Z4, Z7  // Mhl*hi
	VGF2P8AFFINEQB.BCST $0, 16(R13), Z2, Z8 // Mlh*lo
	VGF2P8AFFINEQB.BCST $0, 24(R13), Z4, Z9 // Mhh*hi
	VPTERNLOGD $0x96, Z7, Z6, Z0
	VPTERNLOGD $0x96, Z9, Z8, Z1

	ADDQ $24, R12
	ADDQ $128, R13
	DECQ R11
	JNZ  gfnisrc

	VPUNPCKLBW Z1, Z0, Z2
	VPUNPCKHBW Z1, Z0, Z3
	VPXORD     (DI)(R10*1), Z2, Z2
	VPXORD     64(DI)(R10*1), Z3, Z3
	VMOVDQU64  Z2, (DI)(R10*1)
	VMOVDQU64  Z3, 64(DI)(R10*1)
	ADDQ       $128, R10
	JMP        gfnistep

gfnidone:
	VZEROUPPER
	RET

// func mulAdd1AVX2(dst, src []byte, tab *[128]byte, start int)
//
// mulAddAVX2 for one source, with its eight tables held in Y0..Y7 for the
// whole call instead of loaded at every step. Y14, Y15 masks; Y8..Y13 the
// step: A, B, their low and high bytes, then the nibbles, whose registers
// take the lookups once a nibble's last lookup is done.
TEXT ·mulAdd1AVX2(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ tab+48(FP), R9
	MOVQ start+56(FP), R10
	MOVL $0x0f0f0f0f, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x00ff00ff, AX
	MOVQ AX, X14
	VPBROADCASTD X14, Y14
	VBROADCASTI128 0(R9), Y0
	VBROADCASTI128 16(R9), Y1
	VBROADCASTI128 32(R9), Y2
	VBROADCASTI128 48(R9), Y3
	VBROADCASTI128 64(R9), Y4
	VBROADCASTI128 80(R9), Y5
	VBROADCASTI128 96(R9), Y6
	VBROADCASTI128 112(R9), Y7

one2step:
	CMPQ R10, CX
	JAE  one2done
	VMOVDQU (SI)(R10*1), Y8
	VMOVDQU 32(SI)(R10*1), Y9
	VPSRLW  $8, Y8, Y10
	VPSRLW  $8, Y9, Y11
	VPAND   Y14, Y8, Y8
	VPAND   Y14, Y9, Y9
	VPACKUSWB Y9, Y8, Y8   // lo
	VPACKUSWB Y11, Y10, Y10 // hi
	VPSRLW  $4, Y8, Y9
	VPSRLW  $4, Y10, Y11
	VPAND   Y15, Y8, Y8   // n0
	VPAND   Y15, Y9, Y9   // n1
	VPAND   Y15, Y10, Y10 // n2
	VPAND   Y15, Y11, Y11 // n3

	VPSHUFB Y8, Y0, Y12   // L = T0lo[n0]
	VPSHUFB Y8, Y1, Y8    // H = T0hi[n0]
	VPSHUFB Y9, Y2, Y13
	VPSHUFB Y9, Y3, Y9
	VPXOR   Y13, Y12, Y12
	VPXOR   Y9, Y8, Y8
	VPSHUFB Y10, Y4, Y13
	VPSHUFB Y10, Y5, Y10
	VPXOR   Y13, Y12, Y12
	VPXOR   Y10, Y8, Y8
	VPSHUFB Y11, Y6, Y13
	VPSHUFB Y11, Y7, Y11
	VPXOR   Y13, Y12, Y12 // L
	VPXOR   Y11, Y8, Y8   // H

	VPUNPCKLBW Y8, Y12, Y9
	VPUNPCKHBW Y8, Y12, Y10
	VPXOR      (DI)(R10*1), Y9, Y9
	VPXOR      32(DI)(R10*1), Y10, Y10
	VMOVDQU    Y9, (DI)(R10*1)
	VMOVDQU    Y10, 32(DI)(R10*1)
	ADDQ       $64, R10
	JMP        one2step

one2done:
	VZEROUPPER
	RET

// func mulAdd1AVX512(dst, src []byte, tab *[128]byte, start int)
//
// mulAddAVX512 for one source, its eight tables held in Z16..Z23.
TEXT ·mulAdd1AVX512(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ tab+48(FP), R9
	MOVQ start+56(FP), R10
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL $0x00ff00ff, AX
	VPBROADCASTD AX, Z14
	VBROADCASTI32X4 0(R9), Z16
	VBROADCASTI32X4 16(R9), Z17
	VBROADCASTI32X4 32(R9), Z18
	VBROADCASTI32X4 48(R9), Z19
	VBROADCASTI32X4 64(R9), Z20
	VBROADCASTI32X4 80(R9), Z21
	VBROADCASTI32X4 96(R9), Z22
	VBROADCASTI32X4 112(R9), Z23

one512step:
	CMPQ R10, CX
	JAE  one512done
	VMOVDQU64 (SI)(R10*1), Z2
	VMOVDQU64 64(SI)(R10*1), Z3
	VPSRLW    $8, Z2, Z4
	VPSRLW    $8, Z3, Z5
	VPANDD    Z14, Z2, Z2
	VPANDD    Z14, Z3, Z3
	VPACKUSWB Z3, Z2, Z2 // lo
	VPACKUSWB Z5, Z4, Z4 // hi
	VPSRLW    $4, Z2, Z3
	VPSRLW    $4, Z4, Z5
	VPANDD    Z15, Z2, Z2 // n0
	VPANDD    Z15, Z3, Z3 // n1
	VPANDD    Z15, Z4, Z4 // n2
	VPANDD    Z15, Z5, Z5 // n3

	VPSHUFB    Z2, Z16, Z6
	VPSHUFB    Z2, Z17, Z7
	VPSHUFB    Z3, Z18, Z8
	VPSHUFB    Z3, Z19, Z9
	VPSHUFB    Z4, Z20, Z10
	VPSHUFB    Z4, Z21, Z11
	VPSHUFB    Z5, Z22, Z12
	VPSHUFB    Z5, Z23, Z13
	VPTERNLOGD $0x96, Z10, Z8, Z6  // L = T0lo ^ T1lo ^ T2lo
	VPTERNLOGD $0x96, Z11, Z9, Z7  // H = T0hi ^ T1hi ^ T2hi
	VPXORD     Z12, Z6, Z6
	VPXORD     Z13, Z7, Z7

	VPUNPCKLBW Z7, Z6, Z2
	VPUNPCKHBW Z7, Z6, Z3
	VPXORD     (DI)(R10*1), Z2, Z2
	VPXORD     64(DI)(R10*1), Z3, Z3
	VMOVDQU64  Z2, (DI)(R10*1)
	VMOVDQU64  Z3, 64(DI)(R10*1)
	ADDQ       $128, R10
	JMP        one512step

one512done:
	VZEROUPPER
	RET

// func mulAdd1GFNI(dst, src []byte, tab *[128]byte, start int)
//
// mulAddGFNI for one source, its four matrices held in Z16..Z19.
TEXT ·mulAdd1GFNI(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ tab+48(FP), R9
	MOVQ start+56(FP), R10
	MOVL $0x00ff00ff, AX
	VPBROADCASTD AX, Z14
	VPBROADCASTQ 0(R9), Z16
	VPBROADCASTQ 8(R9), Z17
	VPBROADCASTQ 16(R9), Z18
	VPBROADCASTQ 24(R9), Z19

one1gfstep:
	CMPQ R10, CX
	JAE  one1gfdone
	VMOVDQU64 (SI)(R10*1), Z2
	VMOVDQU64 64(SI)(R10*1), Z3
	VPSRLW    $8, Z2, Z4
	VPSRLW    $8, Z3, Z5
	VPANDD    Z14, Z2, Z2
	VPANDD    Z14, Z3, Z3
	VPACKUSWB Z3, Z2, Z2 // lo
	VPACKUSWB Z5, Z4, Z4 // hi

	VGF2P8AFFINEQB $0, Z16, Z2, Z6 // Mll*lo
	VGF2P8AFFINEQB $0, Z17, Z4, Z7 // Mhl*hi
	VGF2P8AFFINEQB $0, Z18, Z2, Z8 // Mlh*lo
	VGF2P8AFFINEQB $0, Z19, Z4, Z9 // Mhh*hi
	VPXORD         Z7, Z6, Z6      // L
	VPXORD         Z9, Z8, Z8      // H

	VPUNPCKLBW Z8, Z6, Z2
	VPUNPCKHBW Z8, Z6, Z3
	VPXORD     (DI)(R10*1), Z2, Z2
	VPXORD     64(DI)(R10*1), Z3, Z3
	VMOVDQU64  Z2, (DI)(R10*1)
	VMOVDQU64  Z3, 64(DI)(R10*1)
	ADDQ       $128, R10
	JMP        one1gfstep

one1gfdone:
	VZEROUPPER
	RET

// func mulAddGFNIAVX2(dst []byte, srcs [][]byte, tabs *tables, start int)
//
// mulAddGFNI on 32-byte vectors (VEX-encoded GF2P8AFFINEQB, for CPUs with
// GFNI but not AVX-512), 64 bytes per step, as mulAddAVX2 is laid out.
TEXT ·mulAddGFNIAVX2(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ srcs_base+24(FP), SI
	MOVQ srcs_len+32(FP), R8
	MOVQ tabs+48(FP), R9
	MOVQ start+56(FP), R10
	MOVL $0x00ff00ff, AX
	MOVQ AX, X14
	VPBROADCASTD X14, Y14

g2step:
	CMPQ R10, CX
	JAE  g2done
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	MOVQ SI, R12
	MOVQ R9, R13
	MOVQ R8, R11

g2src:
	MOVQ      (R12), AX
	VMOVDQU   (AX)(R10*1), Y2
	VMOVDQU   32(AX)(R10*1), Y3
	VPSRLW    $8, Y2, Y4
	VPSRLW    $8, Y3, Y5
	VPAND     Y14, Y2, Y2
	VPAND     Y14, Y3, Y3
	VPACKUSWB Y3, Y2, Y2 // lo
	VPACKUSWB Y5, Y4, Y4 // hi

	VPBROADCASTQ   0(R13), Y6
	VPBROADCASTQ   8(R13), Y7
	VPBROADCASTQ   16(R13), Y8
	VPBROADCASTQ   24(R13), Y9
	VGF2P8AFFINEQB $0, Y6, Y2, Y6 // Mll*lo
	VGF2P8AFFINEQB $0, Y7, Y4, Y7 // Mhl*hi
	VGF2P8AFFINEQB $0, Y8, Y2, Y8 // Mlh*lo
	VGF2P8AFFINEQB $0, Y9, Y4, Y9 // Mhh*hi
	VPXOR          Y6, Y0, Y0
	VPXOR          Y8, Y1, Y1
	VPXOR          Y7, Y0, Y0
	VPXOR          Y9, Y1, Y1

	ADDQ $24, R12
	ADDQ $128, R13
	DECQ R11
	JNZ  g2src

	VPUNPCKLBW Y1, Y0, Y2
	VPUNPCKHBW Y1, Y0, Y3
	VPXOR      (DI)(R10*1), Y2, Y2
	VPXOR      32(DI)(R10*1), Y3, Y3
	VMOVDQU    Y2, (DI)(R10*1)
	VMOVDQU    Y3, 32(DI)(R10*1)
	ADDQ       $64, R10
	JMP        g2step

g2done:
	VZEROUPPER
	RET

// func mulAdd1GFNIAVX2(dst, src []byte, tab *[128]byte, start int)
//
// mulAddGFNIAVX2 for one source, its four matrices held in Y10..Y13.
TEXT ·mulAdd1GFNIAVX2(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ tab+48(FP), R9
	MOVQ start+56(FP), R10
	MOVL $0x00ff00ff, AX
	MOVQ AX, X14
	VPBROADCASTD X14, Y14
	VPBROADCASTQ 0(R9), Y10
	VPBROADCASTQ 8(R9), Y11
	VPBROADCASTQ 16(R9), Y12
	VPBROADCASTQ 24(R9), Y13

g21step:
	CMPQ R10, CX
	JAE  g21done
	VMOVDQU   (SI)(R10*1), Y2
	VMOVDQU   32(SI)(R10*1), Y3
	VPSRLW    $8, Y2, Y4
	VPSRLW    $8, Y3, Y5
	VPAND     Y14, Y2, Y2
	VPAND     Y14, Y3, Y3
	VPACKUSWB Y3, Y2, Y2 // lo
	VPACKUSWB Y5, Y4, Y4 // hi

	VGF2P8AFFINEQB $0, Y10, Y2, Y6 // Mll*lo
	VGF2P8AFFINEQB $0, Y11, Y4, Y7 // Mhl*hi
	VGF2P8AFFINEQB $0, Y12, Y2, Y8 // Mlh*lo
	VGF2P8AFFINEQB $0, Y13, Y4, Y9 // Mhh*hi
	VPXOR          Y7, Y6, Y6      // L
	VPXOR          Y9, Y8, Y8      // H

	VPUNPCKLBW Y8, Y6, Y2
	VPUNPCKHBW Y8, Y6, Y3
	VPXOR      (DI)(R10*1), Y2, Y2
	VPXOR      32(DI)(R10*1), Y3, Y3
	VMOVDQU    Y2, (DI)(R10*1)
	VMOVDQU    Y3, 32(DI)(R10*1)
	ADDQ       $64, R10
	JMP        g21step

g21done:
	VZEROUPPER
	RET

// func cpuid7ECX() uint32
//
// ECX of CPUID leaf 7, subleaf 0 (structured extended features; bit 8 is
// GFNI). The caller makes sure leaf 7 exists.
TEXT ·cpuid7ECX(SB), NOSPLIT, $0-4
	MOVL $7, AX
	XORL CX, CX
	CPUID
	MOVL CX, ret+0(FP)
	RET
