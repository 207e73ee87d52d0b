package spoolfs

import (
	"encoding/binary"
)

// The history log is an append-only file: an 8-byte magic, then records.
// Nothing else is ever written in place, so a crash can only leave a torn
// last record, which open drops (after quarantining its bytes).
//
//	0  2  magic "NH"
//	2  1  kind: 'A' stored article, 'R' rejected id, 'C' checkpoint,
//	      'F' forget the id (its article was found damaged or gone)
//	3  1  message-id length m (0 for 'C')
//	4  4  token segment ('C': checkpoint segment)
//	8  8  token offset  ('C': checkpoint offset)
//	16 4  token length  ('C': 0)
//	20 8  time, Unix nanoseconds: arrival or rejection ('C': newest arrival
//	      in the checkpoint segment, so age expiry survives a restart)
//	28 m  message-id
//	.. 4  CRC-32C of every preceding byte of the record
//
// A checkpoint record promises that every spool record before its position
// has its history record earlier in this file. Open replays the log, then
// scans the spool only from the last checkpoint on.
const (
	histHeaderSize     = 8
	histFixedSize      = 28
	histRecordOverhead = histFixedSize + 4
)

var (
	histMagic     = [histHeaderSize]byte{'N', 'F', 'H', 'I', 'S', 'T', '0', '1'}
	histRecMagic  = []byte{'N', 'H'}
	histFileName  = "history"
	histTempName  = "history.tmp"
	spoolDirName  = "spool"
	quarantineDir = "quarantine"
)

// appendHistRecord appends one history log record.
func appendHistRecord(dst []byte, kind byte, msgid string, tok Token, when int64) []byte {
	start := len(dst)
	var h [histFixedSize]byte
	copy(h[0:2], histRecMagic)
	h[2] = kind
	h[3] = byte(len(msgid))
	binary.BigEndian.PutUint32(h[4:8], tok.Seg)
	binary.BigEndian.PutUint64(h[8:16], tok.Off)
	binary.BigEndian.PutUint32(h[16:20], tok.Len)
	binary.BigEndian.PutUint64(h[20:28], uint64(when))
	dst = append(dst, h[:]...)
	dst = append(dst, msgid...)
	return binary.BigEndian.AppendUint32(dst, crc32c(dst[start:]))
}

// appendCheckpoint appends a checkpoint record for spool position p.
func appendCheckpoint(dst []byte, p Position, newest int64) []byte {
	return appendHistRecord(dst, kindCkpt, "", Token{Seg: p.Seg, Off: uint64(p.Off)}, newest)
}

// histRecord is a decoded history log record.
type histRecord struct {
	kind  byte
	msgid []byte // points into the scan buffer
	tok   Token
	when  int64
}

// parseHistRecord is the scanner's parse function for history records.
func parseHistRecord(b []byte) (n, need int, ok bool) {
	if len(b) < histFixedSize {
		return 0, histFixedSize, false
	}
	if b[0] != histRecMagic[0] || b[1] != histRecMagic[1] {
		return 0, 0, false
	}
	m := int(b[3])
	switch b[2] {
	case kindArticle, kindReject, kindForget:
		if m == 0 || m > maxMsgIDLen {
			return 0, 0, false
		}
	case kindCkpt:
		if m != 0 {
			return 0, 0, false
		}
	default:
		return 0, 0, false
	}
	size := histRecordOverhead + m
	if len(b) < size {
		return 0, size, false
	}
	if binary.BigEndian.Uint32(b[size-4:size]) != crc32c(b[:size-4]) {
		return 0, 0, false
	}
	return size, 0, true
}

// decodeHistRecord decodes a record parseHistRecord accepted.
func decodeHistRecord(b []byte) histRecord {
	m := int(b[3])
	return histRecord{
		kind:  b[2],
		msgid: b[histFixedSize : histFixedSize+m],
		tok: Token{
			Seg: binary.BigEndian.Uint32(b[4:8]),
			Off: binary.BigEndian.Uint64(b[8:16]),
			Len: binary.BigEndian.Uint32(b[16:20]),
		},
		when: int64(binary.BigEndian.Uint64(b[20:28])),
	}
}
