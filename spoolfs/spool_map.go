package spoolfs

// Mapped articles: a stored article's bytes seen in place, in the page
// cache, through a read-only shared mapping of its segment file, so that
// a sender checks the CRC and writes the article from the same memory
// without copying it into a buffer first (MapArticle, Mapping).

import (
	"errors"
	"fmt"
	"hash/crc32"
	"runtime/debug"
	"sync"
	"syscall"
)

// ErrNoMapping is returned by MapArticle where articles cannot be mapped
// (outside Linux, or when mmap(2) fails); send the Section instead.
var ErrNoMapping = errors.New("spool: articles cannot be mapped here")

// A Mapping is one stored article mapped read-only into memory. Bytes
// shows the article as the page cache holds it: Verify checks it against
// the CRC recorded when it was stored, and a sender that writes Bytes
// after Verify sends exactly the bytes it checked (write(2) copies them
// from the same pages). Close unmaps it; Bytes must not be used after
// Close.
//
// Reading the mapping of a file that was cut short underneath it, or whose
// disk fails, raises SIGBUS instead of returning an error: Verify turns
// that into an error (debug.SetPanicOnFault), and write(2) from such a
// mapping fails with EFAULT.
type Mapping struct {
	mem  []byte // the whole mapping, from a page boundary
	art  []byte // the article within it
	h    recordHeader
	tok  Token
	sec  *Section // holds the segment while mapped
	once sync.Once
}

// Bytes returns the mapped article (not checked until Verify).
func (m *Mapping) Bytes() []byte { return m.art }

// IDSum is the CRC-32C of the article's message-id recorded in its record
// header: with the token it names the article (a token whose offsets came
// to hold another article after a cut has another IDSum).
func (m *Mapping) IDSum() uint32 { return m.h.crcM }

// Verify checks the mapped article against the CRC recorded when it was
// stored, as Get does; the error wraps ErrCorrupt on a mismatch and
// syscall.EIO when the pages cannot be read (the file was cut short, or
// the disk failed).
func (m *Mapping) Verify() (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("spool: get %s: reading the mapped article faulted (%v): %w", m.tok, r, syscall.EIO)
		}
	}()
	if crc32.Checksum(m.art, castagnoli) != m.h.crcP {
		m.sec.s.log.Error("corrupt article", "segment", m.sec.seg.path, "token", m.tok.String())
		return fmt.Errorf("spool: get %s: %w: CRC mismatch", m.tok, ErrCorrupt)
	}
	return nil
}

// Close unmaps the article and releases its segment.
func (m *Mapping) Close() error {
	var err error
	m.once.Do(func() {
		err = unmapArticle(m.mem)
		m.sec.Close()
		m.mem, m.art = nil, nil
	})
	if err != nil {
		return fmt.Errorf("spool: unmap %s: %w", m.tok, err)
	}
	return nil
}

// MapArticle maps the article at tok, after checking its record header as
// Section does (not its CRC: Verify does that). Errors wrap ErrExpired,
// ErrNotFound or ErrCorrupt as Get's do, or ErrNoMapping when the article
// cannot be mapped (the Section can still be sent).
func (s *Spool) MapArticle(tok Token) (*Mapping, error) {
	sec, h, err := s.section(tok)
	if err != nil {
		return nil, err
	}
	mem, art, err := mapArticle(sec)
	if err != nil {
		sec.Close()
		return nil, fmt.Errorf("spool: map %s: %w: %w", tok, ErrNoMapping, err)
	}
	return &Mapping{mem: mem, art: art, h: h, tok: tok, sec: sec}, nil
}

// IDSum returns the CRC-32C of the message-id recorded in the header of
// the article at tok (one pread of the header), as Mapping.IDSum does.
func (s *Spool) IDSum(tok Token) (uint32, error) {
	sec, h, err := s.section(tok)
	if err != nil {
		return 0, err
	}
	sec.Close()
	return h.crcM, nil
}
