//go:build amd64 && !purego

package proto

import "golang.org/x/sys/cpu"

// blockHaveAVX2 selects blockNLDotAVX2 in blockIndexNLDot; tests turn it off
// to run the portable search too.
var blockHaveAVX2 = cpu.X86.HasAVX2

// blockNLDotAVX2 returns the index of the first "\n." in s that starts below
// blocks*64, or -1. It reads s[:blocks*64+1], so blocks*64 < len(s) must hold.
//
//go:noescape
func blockNLDotAVX2(s []byte, blocks int) int
