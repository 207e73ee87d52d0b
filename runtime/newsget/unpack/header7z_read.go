package unpack

// The reader under the 7z header check (header7z.go): the library's
// primitive reads (bytes, 7z numbers, bit vectors, CRC lists), each adding
// to the cost what the library allocates for it.

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// headerCheck reads header bytes as the library does, adding up in cost
// what the library allocates on the way.
type headerCheck struct {
	b    []byte
	off  int
	cost int64
	lim  limits7z
	aes  bool // a folder of the archive is AES-encrypted
}

// byte is the library's ReadByte.
func (h *headerCheck) byte() (byte, error) {
	if h.off >= len(h.b) {
		return 0, refuse7z("cut short at byte %d", h.off)
	}
	h.off++
	return h.b[h.off-1], nil
}

// take is n bytes, or a refusal when fewer are left.
func (h *headerCheck) take(n uint64) ([]byte, error) {
	if n > uint64(len(h.b)-h.off) {
		return nil, refuse7z("cut short at byte %d: %d bytes wanted, %d left", h.off, n, len(h.b)-h.off)
	}
	h.off += int(n)
	return h.b[h.off-int(n) : h.off], nil
}

// number is the library's readUint64: 7z's variable-length integer.
func (h *headerCheck) number() (uint64, error) {
	b, err := h.byte()
	if err != nil {
		return 0, err
	}
	l := bits.LeadingZeros8(^b)
	var v uint64
	if l < 7 {
		v |= uint64(b&((1<<(8-l))-1)) << (8 * l)
	}
	for i := range l {
		b, err := h.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(b) << (8 * i)
	}
	return v, nil
}

// count is the library's readUint64Bounded: a number it will use as a
// length (checkUint64).
func (h *headerCheck) count(nonZero bool) (uint64, error) {
	v, err := h.number()
	if err != nil {
		return 0, err
	}
	return v, checkCount7z(v, nonZero)
}

// checkCount7z is the library's checkUint64.
func checkCount7z(v uint64, nonZero bool) error {
	if nonZero && v == 0 {
		return refuse7z("a count of zero")
	}
	if v > math.MaxUint32 {
		return refuse7z("a count of %d", v)
	}
	return nil
}

// alloc adds n items of size bytes each to what the library allocates,
// refusing the header once that passes the limit. Call it where the
// library calls make, before reading the items.
func (h *headerCheck) alloc(what string, n, size uint64) error {
	hi, lo := bits.Mul64(n, size)
	if hi != 0 || lo > uint64(h.lim.memory-h.cost) {
		return refuse7z("%d %s would take more than the limit of %d MiB", n, what, h.lim.memory>>20)
	}
	h.cost += int64(lo)
	return nil
}

// ended refuses bytes left after a plain header (the library's errTooMuch).
func (h *headerCheck) ended() error {
	if h.off != len(h.b) {
		return refuse7z("%d bytes after the end of the header", len(h.b)-h.off)
	}
	return nil
}

// want reads an id and refuses any other.
func (h *headerCheck) want(id byte, where string) error {
	got, err := h.byte()
	if err != nil {
		return err
	}
	if got != id {
		return refuse7z("%s: unexpected id %d, want %d", where, got, id)
	}
	return nil
}

// notExternal reads the "external" byte before a list: the library
// refuses lists kept elsewhere in the archive, and so does the check.
func (h *headerCheck) notExternal(what string) error {
	external, err := h.byte()
	if err != nil {
		return err
	}
	if external > 0 {
		return refuse7z("external %s are not supported", what)
	}
	return nil
}

// section runs parse when id is want (an optional part of the header
// that starts with want) and returns the id that follows; any other id is
// returned as it is.
func (h *headerCheck) section(id, want byte, parse func() error) (byte, error) {
	if id != want {
		return id, nil
	}
	if err := parse(); err != nil {
		return 0, err
	}
	return h.byte()
}

// end7z refuses anything but the end id where a part of the header ends.
func end7z(id byte, where string) error {
	if id != id7zEnd {
		return refuse7z("%s: unexpected id %d", where, id)
	}
	return nil
}

// sizes is the library's readSizes: count numbers, appended one by one.
func (h *headerCheck) sizes(what string, count uint64) ([]uint64, error) {
	if err := checkCount7z(count, true); err != nil {
		return nil, err
	}
	if count > uint64(len(h.b)-h.off) { // a number is one byte at least
		return nil, refuse7z("%d %s in the %d bytes left", count, what, len(h.b)-h.off)
	}
	if err := h.alloc(what, count, 8*grown7z); err != nil {
		return nil, err
	}
	v := make([]uint64, count)
	for i := range v {
		var err error
		if v[i], err = h.number(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// bools is the library's readBool: count bits, appended one by one. It
// returns how many are set.
func (h *headerCheck) bools(what string, count uint64) (uint64, error) {
	if err := checkCount7z(count, true); err != nil {
		return 0, err
	}
	b, err := h.take((count + 7) / 8)
	if err != nil {
		return 0, err
	}
	if err := h.alloc(what, count, grown7z); err != nil {
		return 0, err
	}
	var set uint64
	for i := range count {
		set += uint64(b[i/8] >> (7 - i%8) & 1)
	}
	return set, nil
}

// defined is the library's readOptionalBool: which of count items are
// defined, as a bitmap (nil when all are), and how many.
func (h *headerCheck) defined(what string, count uint64) ([]byte, uint64, error) {
	if err := checkCount7z(count, true); err != nil {
		return nil, 0, err
	}
	all, err := h.byte()
	if err != nil {
		return nil, 0, err
	}
	if all != 0 {
		return nil, count, h.alloc(what, count, 1)
	}
	start := h.off
	n, err := h.bools(what, count)
	return h.b[start:h.off], n, err
}

// digests is the library's readCRC: the CRC-32 of count streams, 0 where
// not defined.
func (h *headerCheck) digests(what string, count uint64) ([]uint32, error) {
	if err := checkCount7z(count, true); err != nil {
		return nil, err
	}
	bitmap, n, err := h.defined(what, count)
	if err != nil {
		return nil, err
	}
	if err := h.alloc(what, count, 4); err != nil {
		return nil, err
	}
	raw, err := h.take(4 * n)
	if err != nil {
		return nil, err
	}
	crcs := make([]uint32, count)
	for i := range crcs {
		if bitmap == nil || bitmap[i/8]>>(7-i%8)&1 != 0 {
			crcs[i], raw = binary.LittleEndian.Uint32(raw), raw[4:]
		}
	}
	return crcs, nil
}
