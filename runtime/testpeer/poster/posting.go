// Package poster cuts files into yEnc articles and an NZB, as a poster
// would post them, so tests and newsbench can put files on a server
// (nntptest, INN) and download them back.
package poster

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"

	"github.com/newsflow/newsflow/proto"
)

// A Posting is a file cut into yEnc parts as a poster would post it: the
// articles and the NZB that lists them. Tests and newsbench use it to put
// files on a server (nntptest, INN) and download them back.
type Posting struct {
	Name     string // the file's name (yEnc name= and subject)
	Data     []byte
	PartSize int // bytes per part
	Group    string
	Date     int64 // NZB date=, Unix seconds; 0 leaves it out
	// IDPrefix makes the message-ids unique across postings:
	// <IDPrefix.part N.of.M@newsflow.test>.
	IDPrefix string
	// NoFileCRC leaves the whole file's crc32= out of =yend, as some
	// posters do: only each part's pcrc32 checks the data.
	NoFileCRC bool
}

// Parts is the number of articles of the posting.
func (p Posting) Parts() int { return (len(p.Data) + p.PartSize - 1) / p.PartSize }

// MessageID is part n's message-id, with angle brackets.
func (p Posting) MessageID(n int) string {
	return fmt.Sprintf("<%s.part%dof%d@newsflow.test>", p.IDPrefix, n, p.Parts())
}

// Body is part n's yEnc body (CRLF lines, not dot-stuffed): =ybegin with
// part= and total=, =ypart, data, =yend with pcrc32 and the whole file's
// crc32.
func (p Posting) Body(n int) []byte { return p.body(n, false) }

// WireBody is Body in NNTP wire form: dot-stuffed, ending in ".\r\n".
func (p Posting) WireBody(n int) []byte { return p.body(n, true) }

func (p Posting) body(n int, wire bool) []byte {
	begin := (n - 1) * p.PartSize
	end := min(begin+p.PartSize, len(p.Data))
	return proto.YencEncode(nil, p.Data[begin:end], proto.YencOptions{Name: p.Name, Part: n, Total: p.Parts(),
		Begin: int64(begin) + 1, Size: int64(len(p.Data)), HasFileCRC: !p.NoFileCRC, FileCRC: crc32.ChecksumIEEE(p.Data), Wire: wire})
}

// Subject is part n's subject, in the usual posting convention.
func (p Posting) Subject(n int) string {
	return fmt.Sprintf("newsflow test [1/1] - \"%s\" yEnc (%d/%d)", p.Name, n, p.Parts())
}

// Article is part n as a whole article in native form with CRLF line
// ends (not dot-stuffed): header, empty line, body.
func (p Posting) Article(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Path: poster.invalid!not-for-mail\r\nFrom: Poster <poster@newsflow.test>\r\nNewsgroups: %s\r\n"+
		"Subject: %s\r\nDate: Mon, 01 Jan 2024 00:00:00 +0000\r\nMessage-ID: %s\r\n\r\n", p.Group, p.Subject(n), p.MessageID(n))
	b.Write(p.Body(n))
	return b.Bytes()
}

// NZBFile is the posting's <file> element.
func (p Posting) NZBFile() proto.NZBFile {
	f := proto.NZBFile{Poster: "Poster <poster@newsflow.test>", Date: p.Date, Subject: p.Subject(1), Groups: []string{p.Group}}
	for n := 1; n <= p.Parts(); n++ {
		f.Segments = append(f.Segments, proto.NZBSegment{Number: n, Bytes: int64(len(p.Body(n))), MessageID: p.MessageID(n)})
	}
	return f
}

// NZB returns an NZB document listing the postings.
func NZB(ps ...Posting) []byte {
	var n proto.NZB
	for _, p := range ps {
		n.Files = append(n.Files, p.NZBFile())
	}
	return proto.AppendNZB(nil, &n)
}

// RandomData returns n pseudo-random bytes from seed (every byte value
// occurs, so yEnc escapes and dot-stuffing are exercised).
func RandomData(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := rng.Uint64()
		for k := 0; k < 8; k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(rng.Uint32())
	}
	return b
}
