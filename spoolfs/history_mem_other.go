//go:build !linux

package spoolfs

// allocTable returns n zeroed octets for the history's slot array and
// arena chunks: on the Go heap where there is no mmap(2) here.
func allocTable(n int) []byte { return make([]byte, n) }

// freeTable leaves b to the garbage collector.
func freeTable(b []byte) {}
