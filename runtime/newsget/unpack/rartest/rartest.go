// Package rartest writes RAR 5 volume sets for tests and benchmarks:
// stored (method 0) files split across volumes, enough to test volume
// handling (the RAR 5.0 archive format, www.rarlab.com/technote.htm).
// Its inverse is the rardecode library's reader.
package rartest

import (
	"encoding/binary"
	"hash/crc32"
)

// Entry is a file (or directory) to put in a test archive.
type Entry struct {
	Name string
	Data []byte
	Dir  bool
}

// RAR 5 block types and flags (technote "General archive structure").
const (
	rar5Main      = 1
	rar5File      = 2
	rar5End       = 5
	rar5HasData   = 0x0002
	rar5NotFirst  = 0x0008 // data continues from the previous volume
	rar5NotLast   = 0x0010 // data continues in the next volume
	rar5Volume    = 0x0001 // main: archive is a volume
	rar5VolNumber = 0x0002 // main: volume number field present
	rar5EndMore   = 0x0001 // end: not the last volume
	rar5FileDir   = 0x0001
	rar5FileCRC   = 0x0004
)

// Signature starts every RAR 5 volume.
var Signature = []byte{'R', 'a', 'r', '!', 0x1a, 0x07, 0x01, 0x00}

// Vint appends RAR 5's variable-length integer: 7 bits a byte, low first.
func Vint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// Block frames a header: CRC32 of (size vint + header), size, header.
func Block(header []byte) []byte {
	sized := Vint(nil, uint64(len(header)))
	sized = append(sized, header...)
	out := binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(sized))
	return append(out, sized...)
}

// rar5FileBlock is a file header block for one piece of a file, followed
// by the piece. crc is the whole file's CRC-32 on its last piece and the
// piece's own CRC-32 before that (technote: "Data CRC32").
func rar5FileBlock(e Entry, piece []byte, first, last bool) []byte {
	flags := uint64(rar5HasData)
	if !first {
		flags |= rar5NotFirst
	}
	if !last {
		flags |= rar5NotLast
	}
	h := Vint(nil, rar5File)
	h = Vint(h, flags)
	h = Vint(h, uint64(len(piece)))
	fileFlags := uint64(rar5FileCRC)
	attrs := uint64(0o644)
	if e.Dir {
		fileFlags |= rar5FileDir
		attrs = 0o755 | 0o040000
	}
	h = Vint(h, fileFlags)
	h = Vint(h, uint64(len(e.Data)))
	h = Vint(h, attrs)
	sum := crc32.ChecksumIEEE(piece)
	if last {
		sum = crc32.ChecksumIEEE(e.Data)
	}
	h = binary.LittleEndian.AppendUint32(h, sum)
	h = Vint(h, 0) // compression: version 0, method 0 (store)
	h = Vint(h, 1) // host OS: Unix
	h = Vint(h, uint64(len(e.Name)))
	h = append(h, e.Name...)
	return append(Block(h), piece...)
}

// WriteRAR5 returns the volumes of a stored RAR 5 archive holding entries,
// each volume carrying at most per bytes of file data (all in one volume
// when per <= 0).
func WriteRAR5(entries []Entry, per int) [][]byte {
	type piece struct {
		e           Entry
		data        []byte
		first, last bool
	}
	// Cut the entries into pieces, then the pieces into volumes.
	var vols [][]piece
	var cur []piece
	room := per
	for _, e := range entries {
		rest := e.Data
		first := true
		for {
			n := len(rest)
			if per > 0 && n > room {
				n = room
			}
			cur = append(cur, piece{e, rest[:n], first, n == len(rest)})
			rest, first = rest[n:], false
			room -= n
			if per > 0 && room == 0 {
				vols, cur, room = append(vols, cur), nil, per
			}
			if len(rest) == 0 {
				break
			}
		}
	}
	if len(cur) > 0 || len(vols) == 0 {
		vols = append(vols, cur)
	}
	multi := len(vols) > 1
	out := make([][]byte, len(vols))
	for i, ps := range vols {
		b := append([]byte(nil), Signature...)
		main := Vint(nil, rar5Main)
		main = Vint(main, 0)
		var af uint64
		if multi {
			af |= rar5Volume
		}
		if i > 0 {
			af |= rar5VolNumber
		}
		main = Vint(main, af)
		if i > 0 {
			main = Vint(main, uint64(i))
		}
		b = append(b, Block(main)...)
		for _, p := range ps {
			b = append(b, rar5FileBlock(p.e, p.data, p.first, p.last)...)
		}
		end := Vint(nil, rar5End)
		end = Vint(end, 0)
		var ef uint64
		if i < len(vols)-1 {
			ef = rar5EndMore
		}
		end = Vint(end, ef)
		out[i] = append(b, Block(end)...)
	}
	return out
}
