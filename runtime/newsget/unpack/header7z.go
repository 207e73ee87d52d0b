package unpack

// Theory of operation. github.com/bodgit/sevenzip (v1.6.5) allocates for
// the counts a 7z header claims before it reads the items they count: a
// header of 20 bytes that claims 2^32-1 files makes it allocate hundreds of
// GiB for their FileHeaders, and Go's "out of memory" is fatal, not a
// panic that walk could recover. Opening a folder's decoders allocates what
// the header asks for as well (an LZMA2 dictionary of up to 4 GiB, a PPMd
// model of up to 4 GiB, one reader per stream of a folder that may claim
// 2^32-1 streams).
//
// So before the library sees an archive, check7z reads its header itself,
// byte for byte in the library's own grammar (types.go and reader.go of
// v1.6.5: the same ids in the same order, the same errors where it stops),
// and adds up what the library will allocate for each count at the point
// where the library allocates it: headerCheck.alloc is called before the
// items are read, just as the library's make is. Nothing here allocates in
// proportion to a claimed count, only to bytes actually present, and those
// are bounded by maxHeader7z. What the check refuses:
//
//   - a header (or an LZMA-encoded header once decoded) larger than
//     limits7z.header, or lying outside the archive;
//   - a header whose CRC-32 does not match (the library checks it only
//     after parsing, that is after allocating);
//   - more entries than Options.MaxEntries;
//   - a header whose parse would make the library allocate more than
//     limits7z.memory bytes in all;
//   - a folder beyond 7-Zip's own limits (7zIn.cpp: at most 64 coders and
//     64 streams a folder), whose decoders would need more than
//     limits7z.decoder bytes (LZMA and LZMA2 dictionaries, PPMd models).
//
// An encoded header (7zz's default: the header itself LZMA-compressed,
// and AES-encrypted with -mhe=on) is decoded here with the decoders of
// header7z_decode.go, which are bounded the same way, and its decoded bytes
// are checked like a plain header. The check is sound as long as it
// follows the library's grammar, which is why the library's version is
// pinned in go.mod and named here: a new version must be read again.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"unsafe"

	"github.com/bodgit/sevenzip"
)

// limits7z bound what a 7z archive may make the library allocate.
type limits7z struct {
	entries int    // files (Options.MaxEntries)
	header  uint64 // bytes of the header, plain or decoded
	memory  int64  // bytes the library allocates while reading the header
	decoder uint64 // bytes of the decoders of one folder
	// aesCycles bounds the AES key derivation of an encrypted header
	// (2^aesCycles rounds of SHA-256; 7-Zip writes 19, and decodes up
	// to 24, as does the library).
	aesCycles byte
}

// defaultLimits7z: 64 MiB holds the header of millions of files (7zz
// writes about 30 bytes a file); 256 MiB of the library's structures is
// about 700,000 files (some 380 bytes each), beyond DefaultMaxEntries; a
// folder's decoders get what a RAR decoder's window gets.
func defaultLimits7z(maxEntries int) limits7z {
	return limits7z{entries: maxEntries, header: 64 << 20, memory: 256 << 20, decoder: maxRARDictionary, aesCycles: 24}
}

// errHeader7z starts every refusal of check7z.
var errHeader7z = errors.New("7z header refused")

// refuse7z is a refusal of check7z saying why.
func refuse7z(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errHeader7z, fmt.Sprintf(format, args...))
}

// Property ids of the 7z header, as the library numbers them
// (7-Zip's DOC/7zFormat.txt, "Property IDs").
const (
	id7zEnd = iota
	id7zHeader
	id7zArchiveProperties
	id7zAdditionalStreamsInfo
	id7zMainStreamsInfo
	id7zFilesInfo
	id7zPackInfo
	id7zUnpackInfo
	id7zSubStreamsInfo
	id7zSize
	id7zCRC
	id7zFolder
	id7zCodersUnpackSize
	id7zNumUnpackStream
	id7zEmptyStream
	id7zEmptyFile
	id7zAnti
	id7zName
	id7zCTime
	id7zATime
	id7zMTime
	id7zWinAttributes
	id7zComment
	id7zEncodedHeader
	id7zStartPos
	id7zDummy
)

// 7-Zip's own bounds on a folder (CPP/7zip/Archive/7z/7zIn.cpp,
// k_Scan_NumCoders_MAX and k_Scan_NumCodersStreams_in_Folder_MAX).
const (
	maxCoders7z  = 64
	maxStreams7z = 64
)

// What the library allocates per item, in bytes, for the cost model. A
// slice grown by append is counted three times its final length (the old
// and the new array while it doubles).
const (
	sizeFile7z   = uint64(unsafe.Sizeof(sevenzip.FileHeader{})) + uint64(unsafe.Sizeof(sevenzip.File{})) + 8
	sizeFolder7z = 8 + 160 // pointer, struct folder, its pool and map entry
	sizeCoder7z  = 8 + 64  // pointer, struct coder
	sizeTime7z   = 24      // time.Time
	sizeString7z = 16
	grown7z      = 3
)

// signature7z starts every 7z archive (and its start header).
var signature7z = []byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c}

// check7z reads the header of the 7z archive in r (size bytes) as the
// library will, refusing one whose reading or decoders would allocate
// beyond lim. password opens an encrypted header.
func check7z(r io.ReaderAt, size int64, password string, lim limits7z) error {
	// The library's findSignature and init: the signature is searched for
	// in the first MiB; the first place whose start header has the right
	// CRC-32 is the archive.
	offsets, err := findSignature7z(r)
	if err != nil {
		return err
	}
	if len(offsets) == 0 {
		return refuse7z("no 7z signature")
	}
	var start [32]byte
	var off int64
	for _, off = range offsets {
		if n, _ := r.ReadAt(start[:], off); n != len(start) {
			return refuse7z("signature header cut short at offset %d", off)
		}
		if crc32.ChecksumIEEE(start[12:32]) == binary.LittleEndian.Uint32(start[8:12]) {
			err = nil
			break
		}
		err = refuse7z("start header CRC-32 mismatch")
	}
	if err != nil {
		return err
	}
	next, hsize := binary.LittleEndian.Uint64(start[12:20]), binary.LittleEndian.Uint64(start[20:28])
	base := off + 32 // where packed streams start (the library's z.start)
	switch {
	case hsize == 0:
		return refuse7z("empty header")
	case hsize > lim.header:
		return refuse7z("header of %d bytes, more than the limit of %d", hsize, lim.header)
	case next > uint64(size) || uint64(base)+next+hsize > uint64(size):
		return refuse7z("header at %d+%d bytes lies beyond the end of the archive (%d bytes)", next, hsize, size)
	}
	b := make([]byte, hsize)
	if _, err := r.ReadAt(b, base+int64(next)); err != nil {
		return fmt.Errorf("%w: reading the header: %w", errHeader7z, err)
	}
	if crc32.ChecksumIEEE(b) != binary.LittleEndian.Uint32(start[28:32]) {
		return refuse7z("header CRC-32 mismatch")
	}
	h := &headerCheck{b: b, lim: lim}
	id, err := h.byte()
	if err != nil {
		return err
	}
	switch id {
	case id7zHeader:
		if err := h.header(); err != nil {
			return err
		}
	case id7zEncodedHeader:
		si, err := h.streamsInfo()
		if err != nil {
			return err
		}
		if err := h.ended(); err != nil {
			return err
		}
		if len(si.folders) != 1 {
			return refuse7z("encoded header in %d folders, not 1", len(si.folders))
		}
		decoded, err := decodeHeader7z(io.NewSectionReader(r, base, int64(next)), si, password, lim)
		if err != nil {
			return err
		}
		// The library reads the decoded header without checking that it
		// ends where its bytes do, so neither does h.
		h.b, h.off = decoded, 0
		if id, err := h.byte(); err != nil || id != id7zHeader {
			return refuse7z("decoded header does not start with a header")
		}
		return h.header()
	default:
		return refuse7z("unexpected id %d at the start of the header", id)
	}
	return h.ended()
}

// findSignature7z returns where the signature is in the first MiB of r,
// as the library's findSignature: at once if at 0, else every place.
func findSignature7z(r io.ReaderAt) ([]int64, error) {
	const chunk, limit = 4096, 1 << 20
	buf := make([]byte, chunk+len(signature7z))
	var offsets []int64
	for off := int64(0); off < limit; off += chunk {
		n, err := r.ReadAt(buf, off)
		for i := 0; ; {
			j := indexSignature7z(buf[i:n])
			if j < 0 {
				break
			}
			offsets = append(offsets, off+int64(i+j))
			if offsets[0] == 0 {
				return offsets, nil
			}
			i += j + 1
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errHeader7z, err)
		}
	}
	return offsets, nil
}

// indexSignature7z is bytes.Index(b, signature7z).
func indexSignature7z(b []byte) int {
	for i := 0; i+len(signature7z) <= len(b); i++ {
		if string(b[i:i+len(signature7z)]) == string(signature7z) {
			return i
		}
	}
	return -1
}

// headerCheck reads header bytes as the library does, adding up in cost
// what the library allocates on the way.
type headerCheck struct {
	b    []byte
	off  int
	cost int64
	lim  limits7z
}

// streams7z is what the check keeps of a streams info: enough to decode
// an encoded header.
type streams7z struct {
	packPos   uint64
	packSizes []uint64
	folders   []*folder7z
	digests   []uint32 // per folder, 0 where none; nil when absent
}

// folder7z is one folder: its coders, how they are bound, its sizes.
type folder7z struct {
	coders    []coder7z
	bindPairs [][2]uint64 // in, out
	packed    []uint64    // inputs fed from packed streams
	sizes     []uint64    // of each coder's output
	in, out   uint64
}

// coder7z is one coder of a folder: method id, streams, properties.
type coder7z struct {
	id      []byte
	in, out uint64
	props   []byte
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

// header is the library's readHeader, after its id.
func (h *headerCheck) header() error {
	id, err := h.byte()
	if err != nil {
		return err
	}
	if id == id7zArchiveProperties || id == id7zAdditionalStreamsInfo {
		return refuse7z("archive properties and additional streams are not supported")
	}
	if id, err = h.section(id, id7zMainStreamsInfo, func() error {
		_, err := h.streamsInfo()
		return err
	}); err != nil {
		return err
	}
	if id, err = h.section(id, id7zFilesInfo, h.filesInfo); err != nil {
		return err
	}
	return end7z(id, "header")
}

// streamsInfo is the library's readStreamsInfo.
func (h *headerCheck) streamsInfo() (*streams7z, error) {
	s := &streams7z{}
	id, err := h.byte()
	if err != nil {
		return nil, err
	}
	if id, err = h.section(id, id7zPackInfo, func() error { return h.packInfo(s) }); err != nil {
		return nil, err
	}
	unpack := id == id7zUnpackInfo
	if id, err = h.section(id, id7zUnpackInfo, func() error { return h.unpackInfo(s) }); err != nil {
		return nil, err
	}
	if id == id7zSubStreamsInfo && !unpack {
		return nil, refuse7z("substreams without unpack info")
	}
	if id, err = h.section(id, id7zSubStreamsInfo, func() error { return h.subStreamsInfo(s) }); err != nil {
		return nil, err
	}
	return s, end7z(id, "streams info")
}

// packInfo is the library's readPackInfo.
func (h *headerCheck) packInfo(s *streams7z) error {
	var err error
	if s.packPos, err = h.number(); err != nil {
		return err
	}
	streams, err := h.count(true)
	if err != nil {
		return err
	}
	id, err := h.byte()
	if err != nil {
		return err
	}
	if id, err = h.section(id, id7zSize, func() (err error) {
		s.packSizes, err = h.sizes("pack sizes", streams)
		return err
	}); err != nil {
		return err
	}
	if id, err = h.section(id, id7zCRC, func() error {
		_, err := h.digests("pack digests", streams)
		return err
	}); err != nil {
		return err
	}
	return end7z(id, "pack info")
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

// unpackInfo is the library's readUnpackInfo.
func (h *headerCheck) unpackInfo(s *streams7z) error {
	if err := h.want(id7zFolder, "unpack info"); err != nil {
		return err
	}
	folders, err := h.count(true)
	if err != nil {
		return err
	}
	external, err := h.byte()
	if err != nil {
		return err
	}
	if external > 0 {
		return refuse7z("external folders are not supported")
	}
	if folders > uint64(len(h.b)-h.off) { // a folder is several bytes
		return refuse7z("%d folders in the %d bytes left", folders, len(h.b)-h.off)
	}
	if folders > uint64(h.lim.entries) {
		// Each holds a file at least; and the library looks for a
		// file's folder from the first one, file by file.
		return refuse7z("%d folders, more than the limit of %d entries", folders, h.lim.entries)
	}
	for range folders {
		if err := h.alloc("folders", 1, sizeFolder7z*grown7z); err != nil {
			return err
		}
		f, err := h.folder()
		if err != nil {
			return err
		}
		s.folders = append(s.folders, f)
	}
	if err := h.want(id7zCodersUnpackSize, "unpack info"); err != nil {
		return err
	}
	for _, f := range s.folders {
		if err := h.alloc("unpack sizes", f.out, 8); err != nil {
			return err
		}
		f.sizes = make([]uint64, f.out)
		for i := range f.sizes {
			if f.sizes[i], err = h.number(); err != nil {
				return err
			}
		}
		if err := f.checkDecoders(h.lim.decoder); err != nil {
			return err
		}
	}
	id, err := h.byte()
	if err != nil {
		return err
	}
	if id, err = h.section(id, id7zCRC, func() (err error) {
		s.digests, err = h.digests("folder digests", folders)
		return err
	}); err != nil {
		return err
	}
	return end7z(id, "unpack info")
}

// folder is the library's readFolder, held to 7-Zip's bounds.
func (h *headerCheck) folder() (*folder7z, error) {
	coders, err := h.count(true)
	if err != nil {
		return nil, err
	}
	if coders > maxCoders7z {
		return nil, refuse7z("a folder of %d coders (7-Zip allows %d)", coders, maxCoders7z)
	}
	f := &folder7z{}
	for range coders {
		c, err := h.coder()
		if err != nil {
			return nil, err
		}
		f.coders = append(f.coders, c)
		f.in += c.in
		f.out += c.out
		if f.in > maxStreams7z || f.out > maxStreams7z {
			// The library makes one reader for each stream.
			return nil, refuse7z("a folder of more than %d streams", maxStreams7z)
		}
	}
	if f.in < f.out {
		return nil, refuse7z("a folder with more outputs than inputs")
	}
	for range f.out - 1 {
		in, err := h.count(false)
		if err != nil {
			return nil, err
		}
		out, err := h.count(false)
		if err != nil {
			return nil, err
		}
		f.bindPairs = append(f.bindPairs, [2]uint64{in, out})
	}
	packedStreams := f.in - (f.out - 1)
	if packedStreams == 1 {
		for i := range f.in {
			if f.boundIn(i) < 0 {
				f.packed = append(f.packed, i)
			}
		}
		return f, nil
	}
	for range packedStreams {
		v, err := h.number()
		if err != nil {
			return nil, err
		}
		f.packed = append(f.packed, v)
	}
	return f, nil
}

// boundIn is the bind pair feeding input i, or -1.
func (f *folder7z) boundIn(i uint64) int {
	for k, bp := range f.bindPairs {
		if bp[0] == i {
			return k
		}
	}
	return -1
}

// boundOut is the bind pair taking output i, or -1.
func (f *folder7z) boundOut(i uint64) int {
	for k, bp := range f.bindPairs {
		if bp[1] == i {
			return k
		}
	}
	return -1
}

// unpackSize is the library's folder.unpackSize: the size of the output
// no bind pair takes.
func (f *folder7z) unpackSize() uint64 {
	if len(f.sizes) == 0 {
		return 0
	}
	for i := len(f.sizes) - 1; i >= 0; i-- {
		if f.boundOut(uint64(i)) < 0 {
			return f.sizes[i]
		}
	}
	return f.sizes[len(f.sizes)-1]
}

// coder is the library's readCoder.
func (h *headerCheck) coder() (coder7z, error) {
	var c coder7z
	if err := h.alloc("coders", 1, sizeCoder7z*grown7z); err != nil {
		return c, err
	}
	v, err := h.byte()
	if err != nil {
		return c, err
	}
	if c.id, err = h.take(uint64(v & 0xf)); err != nil {
		return c, err
	}
	c.in, c.out = 1, 1
	if v&0x10 != 0 {
		if c.in, err = h.count(true); err != nil {
			return c, err
		}
		if c.out, err = h.count(true); err != nil {
			return c, err
		}
		if c.in > maxStreams7z || c.out > maxStreams7z {
			return c, refuse7z("a coder of %d inputs and %d outputs", c.in, c.out)
		}
	}
	if v&0x20 != 0 {
		size, err := h.count(true)
		if err != nil {
			return c, err
		}
		if size > uint64(len(h.b)-h.off) {
			return c, refuse7z("coder properties of %d bytes in the %d left", size, len(h.b)-h.off)
		}
		if err := h.alloc("bytes of coder properties", size, 1); err != nil {
			return c, err
		}
		if c.props, err = h.take(size); err != nil {
			return c, err
		}
	}
	return c, nil
}

// subStreamsInfo is the library's readSubStreamsInfo.
func (h *headerCheck) subStreamsInfo(s *streams7z) error {
	id, err := h.byte()
	if err != nil {
		return err
	}
	if err := h.alloc("folders", uint64(len(s.folders)), 8); err != nil {
		return err
	}
	streams := make([]uint64, len(s.folders))
	for i := range streams {
		streams[i] = 1
	}
	if id, err = h.section(id, id7zNumUnpackStream, func() (err error) {
		for i := range streams {
			if streams[i], err = h.number(); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	files := uint64(0)
	for _, v := range streams {
		files += v // wrapping, as the library's sum does
	}
	if err := checkCount7z(files, false); err != nil {
		return err
	}
	if id, err = h.section(id, id7zSize, func() error { return h.substreamSizes(streams, files) }); err != nil {
		return err
	}
	if id, err = h.section(id, id7zCRC, func() error {
		_, err := h.digests("substream digests", files)
		return err
	}); err != nil {
		return err
	}
	return end7z(id, "substreams info")
}

// substreamSizes reads the sizes of every folder's substreams but the
// last (which is the rest of the folder), files in all.
func (h *headerCheck) substreamSizes(streams []uint64, files uint64) error {
	if err := h.alloc("substream sizes", files, 8); err != nil {
		return err
	}
	k := uint64(0)
	for _, n := range streams {
		if n == 0 {
			continue
		}
		for j := uint64(1); j < n; j++ {
			if k >= files {
				return refuse7z("more substream sizes than substreams")
			}
			if _, err := h.number(); err != nil {
				return err
			}
			k++
		}
		if k >= files {
			return refuse7z("more substream sizes than substreams")
		}
		k++
	}
	return nil
}

// filesInfo is the library's readFilesInfo.
func (h *headerCheck) filesInfo() error {
	files, err := h.count(true)
	if err != nil {
		return err
	}
	if files > uint64(h.lim.entries) {
		return refuse7z("it claims %d entries, more than the limit of %d", files, h.lim.entries)
	}
	// The header's []FileHeader, then the Reader's []*File and each File.
	if err := h.alloc("entries", files, sizeFile7z); err != nil {
		return err
	}
	var emptyStreams uint64
	for {
		property, err := h.byte()
		if err != nil {
			return err
		}
		if property == id7zEnd {
			return nil
		}
		length, err := h.number()
		if err != nil {
			return err
		}
		switch property {
		case id7zEmptyStream:
			n, err := h.bools("empty stream flags", files)
			if err != nil {
				return err
			}
			emptyStreams += n
		case id7zEmptyFile:
			if _, err := h.bools("empty file flags", emptyStreams); err != nil {
				return err
			}
		case id7zCTime, id7zATime, id7zMTime:
			if err := h.items("times", files, sizeTime7z, 8); err != nil {
				return err
			}
		case id7zName:
			if err := h.names(files, length); err != nil {
				return err
			}
		case id7zWinAttributes:
			if err := h.items("attributes", files, 4, 4); err != nil {
				return err
			}
		case id7zDummy:
			if int64(length) > 0 { // the library copies nothing for a negative length
				if _, err := h.take(length); err != nil {
					return err
				}
			}
		default:
			return refuse7z("files info: unexpected property %d", property)
		}
	}
}

// items is the library's readTimes and readAttributes: which of count
// items are defined, then size bytes each in memory, wire bytes each of
// the defined ones in the header.
func (h *headerCheck) items(what string, count, size, wire uint64) error {
	if err := checkCount7z(count, true); err != nil {
		return err
	}
	_, n, err := h.defined(what, count)
	if err != nil {
		return err
	}
	external, err := h.byte()
	if err != nil {
		return err
	}
	if external > 0 {
		return refuse7z("external %s are not supported", what)
	}
	if err := h.alloc(what, count, size); err != nil {
		return err
	}
	_, err = h.take(wire * n)
	return err
}

// names is the library's readNames: length-1 bytes of NUL-terminated
// UTF-16 names, which must be count.
func (h *headerCheck) names(count, length uint64) error {
	if err := checkCount7z(count, true); err != nil {
		return err
	}
	external, err := h.byte()
	if err != nil {
		return err
	}
	if external > 0 {
		return refuse7z("external names are not supported")
	}
	var b []byte
	if length > 0 && int64(length-1) > 0 { // the library's io.LimitReader(r, int64(length-1))
		if b, err = h.take(length - 1); err != nil {
			return err
		}
	}
	// []string of count, the names (UTF-8 of UTF-16: at most 3 bytes for
	// 2) and bufio.Scanner's buffer.
	if err := h.alloc("names", count, sizeString7z); err != nil {
		return err
	}
	if err := h.alloc("bytes of names", uint64(len(b))*2+64<<10, 1); err != nil {
		return err
	}
	var names uint64
	tail := false
	for i := 0; i+1 < len(b); i += 2 {
		if b[i] == 0 && b[i+1] == 0 {
			names++
			tail = false
		} else {
			tail = true
		}
	}
	if tail || len(b)%2 == 1 {
		names++
	}
	if names != count {
		return refuse7z("%d names for %d entries", names, count)
	}
	return nil
}
