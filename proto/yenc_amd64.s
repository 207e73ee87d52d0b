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

// func yencDecodeAVX2(dst, src []byte, state uint64) (n, w int, stateOut uint64)
//
// The same rules as yencDecodeAVX512 on 32-byte blocks, with 32-bit masks
// from VPMOVMSKB. Escaped positions become a byte mask through a broadcast,
// a PSHUFB and a compare. Without VPCOMPRESSB the kept bytes are packed
// per 8-byte group with PSHUFB controls from yencShufTab; each group is
// stored 8 bytes wide at the output pointer, which then advances by the
// group's count, so the next group overwrites the excess. The last group
// is merged into the 8 bytes that were there before the block's first
// store, so no byte past the output changes value. A block needs 32 bytes of room. Every block goes the same
// way (no branches on escapes or line ends: they mispredict too often).
//
// Registers: SI src, DI dst, R8 last block start, R9 room left, R10 escIn,
// R11 lsIn; Y0..Y6, Y13, Y14 constants, Y7 block, Y8 decoded.
TEXT ·yencDecodeAVX2(SB), NOSPLIT, $0-80
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), R9
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), R8
	MOVQ state+48(FP), R10
	MOVQ R10, R11
	ANDQ $1, R10
	SHRQ $1, R11
	ANDQ $1, R11
	SUBQ $32, R8
	JLT  done2
	ADDQ SI, R8

	MOVL $0x3d, AX
	VMOVD AX, X0
	VPBROADCASTB X0, Y0
	MOVL $0x0d, AX
	VMOVD AX, X1
	VPBROADCASTB X1, Y1
	MOVL $0x0a, AX
	VMOVD AX, X2
	VPBROADCASTB X2, Y2
	MOVL $0x2e, AX
	VMOVD AX, X3
	VPBROADCASTB X3, Y3
	MOVL $0x79, AX
	VMOVD AX, X4
	VPBROADCASTB X4, Y4
	MOVL $42, AX
	VMOVD AX, X5
	VPBROADCASTB X5, Y5
	MOVL $64, AX
	VMOVD AX, X6
	VPBROADCASTB X6, Y6
	VMOVDQU ·yencAVX2Consts+0(SB), Y13
	VMOVDQU ·yencAVX2Consts+32(SB), Y14

loop2:
	CMPQ R9, $32
	JLT  done2
	VMOVDQU   (SI), Y7
	VPCMPEQB  Y0, Y7, Y8  // '='
	VPCMPEQB  Y1, Y7, Y9  // CR
	VPCMPEQB  Y2, Y7, Y10 // LF
	VPOR      Y9, Y10, Y9
	VPOR      Y8, Y9, Y9  // drop
	VPCMPEQB  Y3, Y7, Y11 // '.'
	VPCMPEQB  Y4, Y7, Y12 // 'y'
	VPMOVMSKB Y8, AX
	VPMOVMSKB Y9, BX
	VPMOVMSKB Y10, CX
	VPMOVMSKB Y11, DX
	VPMOVMSKB Y12, R12

	LEAL (R10)(AX*2), R13 // esc
	MOVL BX, R15
	ANDL R13, R15         // esc & drop
	LEAL (R11)(CX*2), R14 // ls
	SHRL $1, R12
	ORL  $0x80000000, R12
	ANDL AX, R12
	ORL  DX, R12
	ANDL R14, R12
	ORL  R15, R12
	JNZ  done2

	MOVL AX, R10
	SHRL $31, R10 // escIn of the next block
	MOVL CX, R11
	SHRL $31, R11 // lsIn of the next block

	VPSUBB       Y5, Y7, Y8
	VMOVD        R13, X9
	VPBROADCASTD X9, Y9
	VPSHUFB      Y14, Y9, Y9
	VPAND        Y13, Y9, Y9
	VPCMPEQB     Y13, Y9, Y9
	VPAND        Y6, Y9, Y9
	VPSUBB       Y9, Y8, Y8

	NOTL         BX // keep
	POPCNTL      BX, R15
	SUBQ         R15, R9

	// The 8 bytes the last group lands on, read before any store: the
	// first three groups' excess falls inside them, and the merge below
	// puts these values back after the last group's bytes.
	MOVL    BX, CX
	ANDL    $0xffffff, CX
	POPCNTL CX, CX
	MOVQ    (DI)(CX*1), R12
	LEAQ         ·yencShufTab(SB), R14
	VEXTRACTI128 $1, Y8, X11

	MOVL    BX, AX
	ANDL    $0xff, AX
	VMOVQ   (R14)(AX*8), X10
	VPSHUFB X10, X8, X12
	VMOVQ   X12, (DI)
	POPCNTL AX, AX
	ADDQ    AX, DI

	VPSRLDQ $8, X8, X9
	MOVL    BX, AX
	SHRL    $8, AX
	ANDL    $0xff, AX
	VMOVQ   (R14)(AX*8), X10
	VPSHUFB X10, X9, X12
	VMOVQ   X12, (DI)
	POPCNTL AX, AX
	ADDQ    AX, DI

	MOVL    BX, AX
	SHRL    $16, AX
	ANDL    $0xff, AX
	VMOVQ   (R14)(AX*8), X10
	VPSHUFB X10, X11, X12
	VMOVQ   X12, (DI)
	POPCNTL AX, AX
	ADDQ    AX, DI

	// Last group: merge its bytes into the 8 bytes read before the stores
	// (R12), so those after them keep their values and nothing past the
	// output changes.
	VPSRLDQ $8, X11, X9
	MOVL    BX, AX
	SHRL    $24, AX
	VMOVQ   (R14)(AX*8), X10
	VPSHUFB X10, X9, X12
	VMOVQ   X12, DX
	POPCNTL AX, AX
	SHLL    $3, AX
	MOVQ    $-1, R15
	BZHIQ   AX, R15, R15 // the low 8*count bits
	ANDQ    R15, DX
	ANDNQ   R12, R15, R13
	ORQ     R13, DX
	MOVQ    DX, (DI)
	SHRL    $3, AX
	ADDQ    AX, DI

next2:
	ADDQ $32, SI
	CMPQ SI, R8
	JLS  loop2

done2:
	VZEROUPPER
	SUBQ src_base+24(FP), SI
	MOVQ SI, n+56(FP)
	SUBQ dst_base+0(FP), DI
	MOVQ DI, w+64(FP)
	SHLQ $1, R11
	ORQ  R11, R10
	MOVQ R10, stateOut+72(FP)
	RET
