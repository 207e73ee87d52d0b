// Package par2 holds the PAR 2.0 formats and the arithmetic of the set
// ("Parity Volume Set Specification 2.0", 2003): packet parsing and
// writing, the model of a recovery set, slice checksums compared with CRCs
// known from the download, and the Reed–Solomon matrix that repair solves.
// It is pure: bytes in, values out; no files, no goroutines, no clock.
//
// Every packet starts with a 64-byte header (spec "Conventions"):
//
//	offset  size  field
//	 0       8    magic "PAR2\0PKT"
//	 8       8    length of the whole packet, header included, multiple of 4
//	16      16    MD5 of the packet from offset 32 (set id) to its end
//	32      16    recovery set id (MD5 of the main packet's body)
//	48      16    packet type
//
// Integers are little-endian. A packet whose MD5 is wrong is ignored by
// readers (it is damaged); a packet of an unknown type is skipped.
package par2

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
)

// HeaderSize is the size of the packet header.
const HeaderSize = 64

// Magic starts every packet.
const Magic = "PAR2\x00PKT"

// Packet types of PAR 2.0 (spec sections "Main packet", "File Description
// packet", "Input File Slice Checksum packet", "Recovery Slice packet",
// "Creator packet").
var (
	TypeMain     = typeOf("PAR 2.0\x00Main\x00\x00\x00\x00")
	TypeFileDesc = typeOf("PAR 2.0\x00FileDesc")
	TypeIFSC     = typeOf("PAR 2.0\x00IFSC\x00\x00\x00\x00")
	TypeRecovery = typeOf("PAR 2.0\x00RecvSlic")
	TypeCreator  = typeOf("PAR 2.0\x00Creator\x00")
)

func typeOf(s string) (t [16]byte) { copy(t[:], s); return t }

// Limits on what a set may make us spend. A packet over MaxPacket (other
// than a recovery slice, whose data is streamed, never held) is refused.
const (
	MaxPacket    = 16 << 20 // bytes of a non-recovery packet
	MaxSliceSize = 1 << 30  // bytes of one slice
	MaxSlices    = 32768    // input slices of a set: the spec's constants run out there
	MaxFiles     = 32768    // files named by the main packet
)

// ErrNotPacket means the bytes do not start with the packet magic.
var ErrNotPacket = errors.New("par2: no packet magic")

// A Header is a parsed packet header.
type Header struct {
	Length uint64   // whole packet, header included
	Hash   [16]byte // MD5 of the packet from SetID to the end
	SetID  [16]byte
	Type   [16]byte
}

// BodyLength is the length of the packet after its header.
func (h Header) BodyLength() uint64 { return h.Length - HeaderSize }

// ParseHeader parses the 64-byte header at the start of b. It checks the
// magic and that the length is sane (at least a header, a multiple of 4);
// the caller checks the MD5 once it has the body (Header.Check or a
// streaming md5 fed with Header.HashPrefix and the body).
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, fmt.Errorf("par2: header: %d bytes, need %d", len(b), HeaderSize)
	}
	if string(b[:8]) != Magic {
		return h, ErrNotPacket
	}
	h.Length = binary.LittleEndian.Uint64(b[8:])
	if h.Length < HeaderSize || h.Length%4 != 0 {
		return h, fmt.Errorf("par2: packet length %d: not a multiple of 4 of at least %d", h.Length, HeaderSize)
	}
	copy(h.Hash[:], b[16:32])
	copy(h.SetID[:], b[32:48])
	copy(h.Type[:], b[48:64])
	return h, nil
}

// HashPrefix returns the bytes of the header the packet MD5 covers (set id
// and type); feed them, then the body, to md5 and compare with Hash.
func (h Header) HashPrefix() []byte {
	b := make([]byte, 0, 32)
	b = append(b, h.SetID[:]...)
	return append(b, h.Type[:]...)
}

// Check reports whether body is this packet's body: length and MD5.
func (h Header) Check(body []byte) error {
	if uint64(len(body)) != h.BodyLength() {
		return fmt.Errorf("par2: packet body is %d bytes, header says %d", len(body), h.BodyLength())
	}
	m := md5.New()
	m.Write(h.HashPrefix())
	m.Write(body)
	if [16]byte(m.Sum(nil)) != h.Hash {
		return fmt.Errorf("par2: packet %q: MD5 mismatch (damaged)", typeName(h.Type))
	}
	return nil
}

// typeName renders a packet type for messages.
func typeName(t [16]byte) string {
	b := t[:]
	for i, c := range b {
		if c == 0 {
			b[i] = ' '
		} else if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

// AppendPacket appends a whole packet (header with its MD5, then body) of
// type typ in set setID. body must be a multiple of 4 bytes.
func AppendPacket(dst []byte, setID, typ [16]byte, body []byte) []byte {
	if len(body)%4 != 0 {
		panic("par2: AppendPacket: body not a multiple of 4")
	}
	m := md5.New()
	m.Write(setID[:])
	m.Write(typ[:])
	m.Write(body)
	dst = append(dst, Magic...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(HeaderSize+len(body)))
	dst = m.Sum(dst)
	dst = append(dst, setID[:]...)
	dst = append(dst, typ[:]...)
	return append(dst, body...)
}

// Main is the main packet: the slice size and the files of the set.
type Main struct {
	SliceSize uint64
	// Files are the ids of the files recovery covers, in the order of the
	// input slices (the spec sorts them by id).
	Files [][16]byte
	// Others are ids of files described but not protected.
	Others [][16]byte
}

// ParseMain parses a main packet body.
func ParseMain(body []byte) (Main, error) {
	var m Main
	if len(body) < 12 || (len(body)-12)%16 != 0 {
		return m, fmt.Errorf("par2: main packet: body of %d bytes is not 12+16n", len(body))
	}
	m.SliceSize = binary.LittleEndian.Uint64(body)
	if m.SliceSize == 0 || m.SliceSize%4 != 0 || m.SliceSize > MaxSliceSize {
		return m, fmt.Errorf("par2: main packet: slice size %d: want a multiple of 4 in 4..%d", m.SliceSize, MaxSliceSize)
	}
	n := binary.LittleEndian.Uint32(body[8:])
	total := (len(body) - 12) / 16
	if uint64(n) > uint64(total) {
		return m, fmt.Errorf("par2: main packet: %d recovery files but room for %d ids", n, total)
	}
	if n > MaxFiles {
		return m, fmt.Errorf("par2: main packet: %d files, limit %d", n, MaxFiles)
	}
	ids := make([][16]byte, total)
	for i := range ids {
		copy(ids[i][:], body[12+16*i:])
	}
	m.Files, m.Others = ids[:n:n], ids[n:]
	seen := make(map[[16]byte]bool, total)
	for _, id := range ids {
		if seen[id] {
			return m, fmt.Errorf("par2: main packet: file id %x listed twice", id)
		}
		seen[id] = true
	}
	return m, nil
}

// AppendBody appends the main packet body.
func (m Main) AppendBody(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, m.SliceSize)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(m.Files)))
	for _, id := range m.Files {
		dst = append(dst, id[:]...)
	}
	for _, id := range m.Others {
		dst = append(dst, id[:]...)
	}
	return dst
}

// SetID returns the recovery set id the main packet defines: the MD5 of
// its body.
func (m Main) SetID() [16]byte { return md5.Sum(m.AppendBody(nil)) }

// FileDesc is a file description packet.
type FileDesc struct {
	ID     [16]byte // MD5 of MD5_16k, Length and Name
	MD5    [16]byte // of the whole file
	MD5_16 [16]byte // of the first 16 KiB (or the whole file when shorter)
	Length uint64
	Name   string
}

// FileID returns the id the spec defines for a file: MD5 of the MD5 of its
// first 16 KiB, its length (8 bytes) and its name.
func FileID(md5_16k [16]byte, length uint64, name string) [16]byte {
	b := append(md5_16k[:], binary.LittleEndian.AppendUint64(nil, length)...)
	return md5.Sum(append(b, name...))
}

// ParseFileDesc parses a file description body; the name's zero padding
// is removed and the id must match the contents.
func ParseFileDesc(body []byte) (FileDesc, error) {
	var d FileDesc
	if len(body) < 56 {
		return d, fmt.Errorf("par2: file description: %d bytes, need at least 56", len(body))
	}
	copy(d.ID[:], body)
	copy(d.MD5[:], body[16:])
	copy(d.MD5_16[:], body[32:])
	d.Length = binary.LittleEndian.Uint64(body[48:])
	name := body[56:]
	for len(name) > 0 && name[len(name)-1] == 0 {
		name = name[:len(name)-1]
	}
	d.Name = string(name)
	if d.Length >= 1<<62 {
		return d, fmt.Errorf("par2: file description %q: length %d is absurd", d.Name, d.Length)
	}
	if id := FileID(d.MD5_16, d.Length, d.Name); id != d.ID {
		return d, fmt.Errorf("par2: file description %q: id %x does not match its contents (%x)", d.Name, d.ID, id)
	}
	return d, nil
}

// AppendBody appends the file description body, the name padded with
// zeros to a multiple of 4.
func (d FileDesc) AppendBody(dst []byte) []byte {
	dst = append(dst, d.ID[:]...)
	dst = append(dst, d.MD5[:]...)
	dst = append(dst, d.MD5_16[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, d.Length)
	dst = append(dst, d.Name...)
	for len(d.Name)%4 != 0 {
		dst = append(dst, 0)
		d.Name += "\x00"
	}
	return dst
}

// SliceSum is the checksum pair of one input slice; the last slice of a
// file is zero-padded to the slice size before hashing.
type SliceSum struct {
	MD5   [16]byte
	CRC32 uint32
}

// IFSC is an input file slice checksum packet.
type IFSC struct {
	FileID [16]byte
	Slices []SliceSum
}

// ParseIFSC parses an IFSC body.
func ParseIFSC(body []byte) (IFSC, error) {
	var p IFSC
	if len(body) < 16 || (len(body)-16)%20 != 0 {
		return p, fmt.Errorf("par2: slice checksum packet: body of %d bytes is not 16+20n", len(body))
	}
	copy(p.FileID[:], body)
	n := (len(body) - 16) / 20
	if n > MaxSlices {
		return p, fmt.Errorf("par2: slice checksum packet: %d slices, limit %d", n, MaxSlices)
	}
	p.Slices = make([]SliceSum, n)
	for i := range p.Slices {
		e := body[16+20*i:]
		copy(p.Slices[i].MD5[:], e)
		p.Slices[i].CRC32 = binary.LittleEndian.Uint32(e[16:])
	}
	return p, nil
}

// AppendBody appends the IFSC body.
func (p IFSC) AppendBody(dst []byte) []byte {
	dst = append(dst, p.FileID[:]...)
	for _, s := range p.Slices {
		dst = append(dst, s.MD5[:]...)
		dst = binary.LittleEndian.AppendUint32(dst, s.CRC32)
	}
	return dst
}

// ParseRecoveryExponent returns the exponent at the start of a recovery
// slice body; the slice data follows it (RecoveryDataOffset).
func ParseRecoveryExponent(body []byte) (uint32, error) {
	if len(body) < 4 {
		return 0, fmt.Errorf("par2: recovery slice packet: body of %d bytes", len(body))
	}
	return binary.LittleEndian.Uint32(body), nil
}

// RecoveryDataOffset is where a recovery slice's data starts in its
// packet: after the header and the 4-byte exponent.
const RecoveryDataOffset = HeaderSize + 4

// ParseCreator returns the creator text, zero padding removed.
func ParseCreator(body []byte) string {
	for len(body) > 0 && body[len(body)-1] == 0 {
		body = body[:len(body)-1]
	}
	return string(body)
}

// AppendCreatorBody appends a creator body: text padded to 4 bytes.
func AppendCreatorBody(dst []byte, text string) []byte {
	dst = append(dst, text...)
	for n := len(text); n%4 != 0; n++ {
		dst = append(dst, 0)
	}
	return dst
}
