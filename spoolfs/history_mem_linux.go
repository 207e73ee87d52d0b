//go:build linux

package spoolfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// allocTable returns n zeroed octets outside the Go heap (an anonymous
// private mapping), for the history's slot array and arena chunks. Being
// outside the heap, they do not count toward the garbage collector's heap
// goal, so a history of millions of ids does not also cost a heap's worth
// of collector headroom (the RSS that matters with a peer down), and a grown
// table's old slot array goes back to the kernel at once.
func allocTable(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		// As make would: out of memory is not an error the history can
		// report to its caller.
		panic(fmt.Sprintf("spoolfs: history: mmap %d octets: %v", n, err))
	}
	return b
}

// freeTable returns memory from allocTable to the kernel. Nothing may use
// b afterwards.
func freeTable(b []byte) {
	if len(b) > 0 {
		unix.Munmap(b)
	}
}
