//go:build amd64 && !purego

#include "textflag.h"

// func blockNLDotAVX2(s []byte, blocks int) int
//
// Index of the first i < blocks*64 with s[i] == '\n' && s[i+1] == '.', or -1.
// Each round compares 64 positions: bytes s[i:i+64] against '\n' and
// s[i+1:i+65] against '.', ANDs the two masks, and stops at the first set bit.
TEXT ·blockNLDotAVX2(SB), NOSPLIT, $0-40
	MOVQ s_base+0(FP), SI
	MOVQ blocks+24(FP), CX
	MOVQ SI, DI                // start, to turn the pointer into an index
	MOVQ $0x0a, AX
	VMOVQ AX, X0
	VPBROADCASTB X0, Y0        // Y0 = '\n' x 32
	MOVQ $0x2e, AX
	VMOVQ AX, X1
	VPBROADCASTB X1, Y1        // Y1 = '.' x 32
	TESTQ CX, CX
	JZ   notfound

loop:
	VPCMPEQB (SI), Y0, Y2
	VPCMPEQB 1(SI), Y1, Y3
	VPAND    Y2, Y3, Y2        // pairs at positions 0..31
	VPCMPEQB 32(SI), Y0, Y4
	VPCMPEQB 33(SI), Y1, Y5
	VPAND    Y4, Y5, Y4        // pairs at positions 32..63
	VPOR     Y2, Y4, Y6
	VPTEST   Y6, Y6
	JNZ      found
	ADDQ     $64, SI
	DECQ     CX
	JNZ      loop

notfound:
	VZEROUPPER
	MOVQ $-1, ret+32(FP)
	RET

found:
	VPMOVMSKB Y2, AX
	VPMOVMSKB Y4, DX
	SHLQ      $32, DX
	ORQ       DX, AX
	BSFQ      AX, AX           // lowest pair in this round (AX != 0)
	SUBQ      DI, SI
	ADDQ      SI, AX
	VZEROUPPER
	MOVQ      AX, ret+32(FP)
	RET
