//go:build !amd64 || purego

package proto

// blockHaveAVX2 is false where there is no assembly search.
var blockHaveAVX2 = false

// blockNLDotAVX2 is never called where blockHaveAVX2 is false.
func blockNLDotAVX2(s []byte, blocks int) int { panic("proto: no AVX2 block search") }
