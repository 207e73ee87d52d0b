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
// beyond lim. password opens an encrypted header. When aes is not nil it
// is set to whether a folder of the archive is AES-encrypted.
func check7z(r io.ReaderAt, size int64, password string, lim limits7z, aes *bool) error {
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
	if aes != nil {
		defer func() { *aes = h.aes }()
	}
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
