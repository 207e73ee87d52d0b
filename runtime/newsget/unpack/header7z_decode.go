package unpack

// The decoders of a 7z folder, as far as check7z needs them: what each
// folder's decoders will allocate when the library opens it, and the
// decoding of an encoded header (a folder of LZMA or LZMA2, optionally
// behind 7-Zip's AES, which is what 7-Zip and p7zip write), bounded by
// limits7z.

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"unicode/utf16"

	"github.com/bodgit/sevenzip"
	"github.com/ulikunitz/xz/lzma"
)

// Method ids of the coders check7z knows (7-Zip's DOC/Methods.txt).
var (
	method7zCopy  = []byte{0x00}
	method7zLZMA  = []byte{0x03, 0x01, 0x01}
	method7zLZMA2 = []byte{0x21}
	method7zPPMd  = []byte{0x03, 0x04, 0x01}
	method7zAES   = []byte{0x06, 0xf1, 0x07, 0x01}
)

// fixedMemory7z is what the decoders whose state does not follow from
// their properties allocate at most, by method id: zstd (klauspost's
// MaxWindowSize of 512 MiB and a block, whatever window a frame claims),
// Brotli (a 16 MiB window; large windows are refused), LZ4 (4 MiB
// blocks), bzip2 (900 kB blocks of 4-byte entries). Copy, Deflate, Delta,
// the branch filters, BCJ2 and AES keep a few KiB.
var fixedMemory7z = map[string]uint64{
	"\x04\xf7\x11\x01": 1<<29 + 1<<17,
	"\x04\xf7\x11\x02": 1<<24 + 1<<20,
	"\x04\xf7\x11\x04": 8 << 20,
	"\x04\x02\x02":     8 << 20,
}

// encrypted reports whether a coder of the folder is AES.
func (f *folder7z) encrypted() bool {
	for _, c := range f.coders {
		if bytes.Equal(c.id, method7zAES) {
			return true
		}
	}
	return false
}

// checkDecoders refuses a folder whose decoders need more than limit
// bytes in all when the library opens it: the dictionaries of LZMA (the
// smaller of the one claimed and the coder's output, as the lzma reader
// allocates) and LZMA2, the model of PPMd, and fixedMemory7z of others.
func (f *folder7z) checkDecoders(limit uint64) error {
	var total uint64
	for i, c := range f.coders {
		need := fixedMemory7z[string(c.id)]
		switch {
		case bytes.Equal(c.id, method7zLZMA):
			if len(c.props) != 5 {
				return refuse7z("LZMA coder with %d bytes of properties, not 5", len(c.props))
			}
			need = uint64(binary.LittleEndian.Uint32(c.props[1:]))
			if i < len(f.sizes) && f.sizes[i] < need {
				need = f.sizes[i]
			}
		case bytes.Equal(c.id, method7zLZMA2):
			if len(c.props) != 1 || c.props[0] > 40 {
				return refuse7z("LZMA2 coder with properties %x", c.props)
			}
			need = lzma2Dictionary(c.props[0])
		case bytes.Equal(c.id, method7zPPMd):
			if len(c.props) != 5 {
				return refuse7z("PPMd coder with %d bytes of properties, not 5", len(c.props))
			}
			need = uint64(binary.LittleEndian.Uint32(c.props[1:]))
		}
		if total += need; total > limit {
			return refuse7z("a folder whose decoders need %d MiB, more than the limit of %d MiB", total>>20, limit>>20)
		}
	}
	return nil
}

// lzma2Dictionary is the dictionary an LZMA2 property byte (at most 40)
// asks for (Lzma2Dec.c).
func lzma2Dictionary(p byte) uint64 {
	return uint64(2|p&1) << (p/2 + 11)
}

// decodeHeader7z decodes the encoded header described by si, whose packed
// streams are in packed (the archive after its start header), as the
// library's folderReader does: coders in order, each input a packed
// stream or the output of an earlier coder through a bind pair, and one
// output left unbound. It returns the decoded header, checked against its
// CRC-32 when the archive gives one.
func decodeHeader7z(packed *io.SectionReader, si *streams7z, password string, lim limits7z) ([]byte, error) {
	f := si.folders[0]
	size := f.unpackSize()
	if size > lim.header {
		return nil, refuse7z("encoded header of %d bytes, more than the limit of %d", size, lim.header)
	}
	encrypted := false
	for _, c := range f.coders {
		encrypted = encrypted || bytes.Equal(c.id, method7zAES)
	}
	fail := func(err error) error {
		err = fmt.Errorf("%w: decoding the encoded header: %w", errHeader7z, err)
		if encrypted {
			// Says to passwordHint that a password is missing or wrong.
			return &sevenzip.ReadError{Encrypted: true, Err: err}
		}
		return err
	}
	in := make([]io.Reader, f.in)
	out := make([]io.Reader, f.out)
	pos := si.packPos
	for i, input := range f.packed {
		if input >= f.in || i >= len(si.packSizes) {
			return nil, refuse7z("encoded header: packed stream %d out of range", i)
		}
		n := si.packSizes[i]
		if pos > uint64(packed.Size()) || n > uint64(packed.Size())-pos {
			return nil, refuse7z("encoded header: packed stream at %d+%d lies outside the archive", pos, n)
		}
		in[input] = io.NewSectionReader(packed, int64(pos), int64(n))
		pos += n
	}
	var input, output uint64
	for i, c := range f.coders {
		if c.out != 1 || c.in != 1 || i >= len(f.sizes) {
			return nil, refuse7z("encoded header: coder %d of %d inputs and %d outputs", i, c.in, c.out)
		}
		if in[input] == nil {
			bp := f.boundIn(input)
			if bp < 0 || f.bindPairs[bp][1] >= f.out || out[f.bindPairs[bp][1]] == nil {
				return nil, refuse7z("encoded header: coder %d has no input", i)
			}
			in[input] = out[f.bindPairs[bp][1]]
		}
		r, err := decoder7z(c, f.sizes[i], in[input], password, lim.aesCycles)
		if err != nil {
			return nil, fail(err)
		}
		out[output] = io.LimitReader(r, int64(min(f.sizes[i], 1<<62)))
		input++
		output++
	}
	var last io.Reader
	for i := range f.out {
		if f.boundOut(i) < 0 {
			if last != nil {
				return nil, refuse7z("encoded header: more than one unbound output")
			}
			last = out[i]
		}
	}
	if last == nil {
		return nil, refuse7z("encoded header: no unbound output")
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(last, b); err != nil {
		return nil, fail(err)
	}
	if len(si.digests) > 0 && si.digests[0] != 0 && crc32.ChecksumIEEE(b) != si.digests[0] {
		return nil, fail(fmt.Errorf("CRC-32 mismatch"))
	}
	return b, nil
}

// decoder7z reads what coder c makes of r (size bytes of output).
func decoder7z(c coder7z, size uint64, r io.Reader, password string, aesCycles byte) (io.Reader, error) {
	switch {
	case bytes.Equal(c.id, method7zCopy):
		return r, nil
	case bytes.Equal(c.id, method7zLZMA):
		// The classic .lzma header: properties and dictionary, then the
		// size, as the library's lzma decoder builds it.
		h := append(bytes.Clone(c.props), binary.LittleEndian.AppendUint64(nil, size)...)
		return lzma.ReaderConfig{}.NewReader(bufio.NewReader(io.MultiReader(bytes.NewReader(h), r)))
	case bytes.Equal(c.id, method7zLZMA2):
		return lzma.Reader2Config{DictCap: int(lzma2Dictionary(c.props[0]))}.NewReader2(bufio.NewReader(r))
	case bytes.Equal(c.id, method7zAES):
		return aes7zReader(c.props, password, r, aesCycles)
	}
	return nil, fmt.Errorf("method %x, which the header check does not decode", c.id)
}

// aes7zReader decrypts 7-Zip's AES-256-CBC, its key from the password by
// SHA-256 (the library's internal/aes7z), in at most 2^maxCycles rounds.
func aes7zReader(p []byte, password string, r io.Reader, maxCycles byte) (io.Reader, error) {
	if len(p) < 2 || p[0]&0xc0 == 0 {
		return nil, fmt.Errorf("AES properties %x", p)
	}
	salt := int(p[0]>>7&1 + p[1]>>4)
	iv := int(p[0]>>6&1 + p[1]&0x0f)
	if len(p) != 2+salt+iv {
		return nil, fmt.Errorf("AES properties %x", p)
	}
	b := bytes.Clone(p[2 : 2+salt])
	for _, u := range utf16.Encode([]rune(password)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	key := make([]byte, sha256.Size)
	switch cycles := p[0] & 0x3f; {
	case cycles == 0x3f:
		copy(key, b)
	case cycles > maxCycles:
		return nil, fmt.Errorf("AES key derivation of 2^%d rounds, more than 2^%d", cycles, maxCycles)
	default:
		// SHA-256 of salt, password and counter, 2^cycles times over,
		// written 64 rounds at a time (a write a round takes twice as
		// long: 29 ms against 14 for 2^19 rounds, BenchmarkOpen7z).
		h := sha256.New()
		round := len(b) + 8
		buf := make([]byte, 0, 64*round)
		for i := range uint64(1) << cycles {
			buf = binary.LittleEndian.AppendUint64(append(buf, b...), i)
			if len(buf)+round > cap(buf) {
				h.Write(buf)
				buf = buf[:0]
			}
		}
		h.Write(buf)
		key = h.Sum(key[:0])
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	ivb := make([]byte, aes.BlockSize)
	copy(ivb, p[2+salt:])
	return &cbcReader{r: r, m: cipher.NewCBCDecrypter(block, ivb)}, nil
}

// cbcReader decrypts whole blocks of r.
type cbcReader struct {
	r    io.Reader
	m    cipher.BlockMode
	buf  [4096]byte
	head []byte // decrypted, not yet read
}

func (c *cbcReader) Read(p []byte) (int, error) {
	if len(c.head) == 0 {
		n, err := io.ReadFull(c.r, c.buf[:])
		switch {
		case err == io.ErrUnexpectedEOF && n%aes.BlockSize == 0:
			// The last blocks.
		case err == io.ErrUnexpectedEOF:
			return 0, fmt.Errorf("AES: the data ends within a block")
		case err != nil:
			return 0, err
		}
		c.m.CryptBlocks(c.buf[:n], c.buf[:n])
		c.head = c.buf[:n]
	}
	n := copy(p, c.head)
	c.head = c.head[n:]
	return n, nil
}
