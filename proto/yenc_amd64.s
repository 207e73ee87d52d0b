#include "textflag.h"

// func yencDecodeAVX512(dst, src []byte, state uint64) (n, w int, stateOut uint64)
//
// One 64-byte block per iteration. Masks (bit i is byte i of the block):
//   eq = '=', drop = '=' | CR | LF, lf = LF, dot = '.', y = 'y'
//   esc  = eq<<1 | escIn        byte i is escaped by the '=' before it
//   ls   = lf<<1 | lsIn         byte i starts a wire line
//   bad  = esc & drop           "==", or an escape across a line end
//        | ls & dot             dot-stuffing or the terminator
//        | ls & eq & (y>>1 | 1<<63)   a "=y" control line (or maybe one)
// A bad block goes back to the scalar code. Otherwise the block decodes
// to (byte - 42 - 64*esc) with the drop bytes squeezed out by VPCOMPRESSB,
// and the kept bytes are written with a masked store, so nothing past
// them is touched.
//
// Registers: SI src, DI dst, R8 last block start, R9 room left in dst,
// R10 escIn, R11 lsIn; Z0..Z6 constants, Z7 block, Z8 decoded.
TEXT ·yencDecodeAVX512(SB), NOSPLIT, $0-80
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), R9
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), R8
	MOVQ state+48(FP), R10
	MOVQ R10, R11
	ANDQ $1, R10
	SHRQ $1, R11
	ANDQ $1, R11
	MOVQ SI, DX
	MOVQ DI, BX
	MOVQ DX, n+56(FP)
	MOVQ BX, w+64(FP)
	SUBQ $64, R8
	JLT  done
	ADDQ SI, R8

	MOVL $0x3d, AX
	VPBROADCASTB AX, Z0
	MOVL $0x0d, AX
	VPBROADCASTB AX, Z1
	MOVL $0x0a, AX
	VPBROADCASTB AX, Z2
	MOVL $0x2e, AX
	VPBROADCASTB AX, Z3
	MOVL $0x79, AX
	VPBROADCASTB AX, Z4
	MOVL $42, AX
	VPBROADCASTB AX, Z5
	MOVL $64, AX
	VPBROADCASTB AX, Z6

loop:
	VMOVDQU8 (SI), Z7
	VPCMPEQB Z0, Z7, K1
	VPCMPEQB Z1, Z7, K2
	VPCMPEQB Z2, Z7, K3
	VPCMPEQB Z3, Z7, K4
	VPCMPEQB Z4, Z7, K5
	KORQ     K2, K3, K2
	KORQ     K1, K2, K2
	KMOVQ    K1, AX
	KMOVQ    K2, BX
	KMOVQ    K3, CX
	KMOVQ    K4, DX
	KMOVQ    K5, R12

	LEAQ (R10)(AX*2), R13 // esc
	LEAQ (R11)(CX*2), R14 // ls
	SHRQ $1, R12
	BTSQ $63, R12
	ANDQ AX, R12
	ORQ  DX, R12
	ANDQ R14, R12
	MOVQ BX, R15
	ANDQ R13, R15
	ORQ  R15, R12
	JNZ  done

	POPCNTQ BX, R15
	NEGQ    R15
	ADDQ    $64, R15 // bytes kept
	CMPQ    R15, R9
	JHI     done

	KMOVQ       R13, K6
	VPSUBB      Z5, Z7, Z8
	VPSUBB      Z6, Z8, K6, Z8
	KNOTQ       K2, K7
	VPCOMPRESSB Z8, K7, Z8
	MOVQ        $-1, R13
	BZHIQ       R15, R13, R13
	KMOVQ       R13, K6
	VMOVDQU8    Z8, K6, (DI)
	ADDQ        R15, DI
	SUBQ        R15, R9

	SHRQ $63, AX
	MOVQ AX, R10
	SHRQ $63, CX
	MOVQ CX, R11
	ADDQ $64, SI
	CMPQ SI, R8
	JLS  loop

done:
	VZEROUPPER
	SUBQ src_base+24(FP), SI
	MOVQ SI, n+56(FP)
	SUBQ dst_base+0(FP), DI
	MOVQ DI, w+64(FP)
	SHLQ $1, R11
	ORQ  R11, R10
	MOVQ R10, stateOut+72(FP)
	RET
