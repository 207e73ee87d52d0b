//go:build linux

package spoolfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapArticle maps the pages holding sec's article, read-only and shared
// (the page cache's own pages: no copy), with their page table entries
// filled at once (MAP_POPULATE: one system call instead of a fault every
// few pages as the CRC walks through them). It returns the mapping and the
// article within it.
func mapArticle(sec *Section) (mem, art []byte, err error) {
	if sec.Length <= 0 {
		return nil, nil, fmt.Errorf("empty article")
	}
	page := int64(unix.Getpagesize())
	start := sec.Offset &^ (page - 1)
	lead := sec.Offset - start
	mem, err = unix.Mmap(int(sec.File.Fd()), start, int(lead+sec.Length), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return mem, mem[lead : lead+sec.Length : lead+sec.Length], nil
}

// unmapArticle undoes mapArticle.
func unmapArticle(mem []byte) error {
	if mem == nil {
		return nil
	}
	return unix.Munmap(mem)
}
