package spoolfs

import (
	"encoding/binary"
	"hash/crc32"
)

// On-disk layout of segment files; doc.go describes it in prose. All integers
// are big-endian.
const (
	segHeaderSize  = 16 // magic[8] segment[4] crc32c(0..11)[4]
	recHeaderSize  = 32 // see appendRecord
	recTrailerSize = 4  // end marker
	recOverhead    = recHeaderSize + recTrailerSize

	// maxMsgIDLen is RFC 3977 §3.6's limit: a message-id is at most 250 octets.
	maxMsgIDLen = 250
)

// Record kinds, the byte at offset 4 of a record header. History log records
// use the same letters for the same meanings.
const (
	kindArticle = 'A' // a stored article: payload is its wire form
	kindReject  = 'R' // a refused message-id, remembered: no payload
	kindSeal    = 'S' // last record of a full segment: arrival = newest in segment
	kindCkpt    = 'C' // history only: the spool up to a position is in the log
	kindForget  = 'F' // history only: the id's article was found lost; forget it
)

var (
	segMagic = [8]byte{'N', 'F', 'S', 'P', 'O', 'O', 'L', '1'}
	recMagic = []byte{'N', 'F', 'A', 'R'}
	recEnd   = [4]byte{'N', 'F', 'E', '\n'}

	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// crc32c is CRC-32C (Castagnoli), hardware-accelerated on amd64 and arm64.
func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// appendSegHeader appends the 16-byte header that opens every segment file.
func appendSegHeader(dst []byte, seg uint32) []byte {
	start := len(dst)
	dst = append(dst, segMagic[:]...)
	dst = binary.BigEndian.AppendUint32(dst, seg)
	return binary.BigEndian.AppendUint32(dst, crc32c(dst[start:]))
}

// parseSegHeader returns the segment number recorded in a segment header.
func parseSegHeader(b []byte) (uint32, bool) {
	if len(b) < segHeaderSize || [8]byte(b[:8]) != segMagic {
		return 0, false
	}
	if binary.BigEndian.Uint32(b[12:16]) != crc32c(b[:12]) {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[8:12]), true
}

// recordHeader is the decoded fixed part of a spool record.
type recordHeader struct {
	kind    byte
	idLen   int    // message-id length
	n       uint32 // payload length
	arrived int64  // Unix nanoseconds
	crcP    uint32 // CRC-32C of the payload
	crcM    uint32 // CRC-32C of the message-id
}

// size is the whole record's length on disk.
func (h recordHeader) size() int { return recOverhead + int(h.n) + h.idLen }

// appendRecord appends one spool record:
//
//	0  4  magic "NFAR"
//	4  1  kind ('A', 'R', 'S')
//	5  1  message-id length m
//	6  2  zero
//	8  4  payload length n
//	12 8  arrival time, Unix nanoseconds
//	20 4  CRC-32C of the payload
//	24 4  CRC-32C of the message-id
//	28 4  CRC-32C of header bytes 0..27
//	32 n  payload (the wire article; a Token's Off points here)
//	.. m  message-id
//	.. 4  end marker "NFE\n"
//
// crcP is the payload's CRC-32C, computed by the caller outside any lock.
func appendRecord(dst []byte, kind byte, msgid string, payload []byte, arrived int64, crcP uint32) []byte {
	// Everything is written into dst and checksummed there: a local header
	// array would escape to the heap through crc32 (two allocations a Put).
	start := len(dst)
	dst = append(dst, make([]byte, recHeaderSize)...)
	dst = append(dst, payload...)
	dst = append(dst, msgid...)
	h := dst[start : start+recHeaderSize]
	copy(h[0:4], recMagic)
	h[4] = kind
	h[5] = byte(len(msgid))
	binary.BigEndian.PutUint32(h[8:12], uint32(len(payload)))
	binary.BigEndian.PutUint64(h[12:20], uint64(arrived))
	binary.BigEndian.PutUint32(h[20:24], crcP)
	binary.BigEndian.PutUint32(h[24:28], crc32c(dst[len(dst)-len(msgid):]))
	binary.BigEndian.PutUint32(h[28:32], crc32c(h[:28]))
	return append(dst, recEnd[:]...)
}

// parseRecordHeader decodes and checks the 32-byte header at the start of b.
func parseRecordHeader(b []byte) (recordHeader, bool) {
	if len(b) < recHeaderSize || string(b[0:4]) != string(recMagic) {
		return recordHeader{}, false
	}
	if binary.BigEndian.Uint32(b[28:32]) != crc32c(b[:28]) {
		return recordHeader{}, false
	}
	h := recordHeader{
		kind:    b[4],
		idLen:   int(b[5]),
		n:       binary.BigEndian.Uint32(b[8:12]),
		arrived: int64(binary.BigEndian.Uint64(b[12:20])),
		crcP:    binary.BigEndian.Uint32(b[20:24]),
		crcM:    binary.BigEndian.Uint32(b[24:28]),
	}
	if b[6] != 0 || b[7] != 0 || h.idLen > maxMsgIDLen {
		return recordHeader{}, false
	}
	switch h.kind {
	case kindArticle:
		if h.n == 0 || h.idLen == 0 {
			return recordHeader{}, false
		}
	case kindReject:
		if h.n != 0 || h.idLen == 0 {
			return recordHeader{}, false
		}
	case kindSeal:
		if h.n != 0 || h.idLen != 0 {
			return recordHeader{}, false
		}
	default:
		return recordHeader{}, false
	}
	return h, true
}

// parseRecord is the scanner's parse function for spool records: the length
// of the valid record at the start of b, or how many bytes it needs to
// decide, or (0, 0, false) if b does not start with a valid record.
func parseRecord(b []byte) (n, need int, ok bool) {
	if len(b) < recHeaderSize {
		return 0, recHeaderSize, false
	}
	h, ok := parseRecordHeader(b)
	if !ok {
		return 0, 0, false
	}
	size := h.size()
	if len(b) < size {
		return 0, size, false
	}
	body := b[recHeaderSize : recHeaderSize+int(h.n)]
	id := b[recHeaderSize+int(h.n) : recHeaderSize+int(h.n)+h.idLen]
	if [4]byte(b[size-recTrailerSize:size]) != recEnd || crc32c(body) != h.crcP || crc32c(id) != h.crcM {
		return 0, 0, false
	}
	return size, 0, true
}

// recordView is a valid record inside a scan buffer; its slices are only
// valid until the scanner moves on.
type recordView struct {
	off     int64 // file offset of the record's first byte
	hdr     recordHeader
	payload []byte
	msgid   []byte
}

// viewRecord splits a record that parseRecord accepted.
func viewRecord(off int64, b []byte) recordView {
	h, _ := parseRecordHeader(b)
	p := b[recHeaderSize : recHeaderSize+int(h.n)]
	return recordView{off: off, hdr: h, payload: p, msgid: b[recHeaderSize+int(h.n) : recHeaderSize+int(h.n)+h.idLen]}
}
