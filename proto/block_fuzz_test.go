package proto

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cutBy cuts src into pieces whose lengths cycle through sizes (a 0 size is
// taken as 1); no sizes means one piece.
func cutBy(src, sizes []byte) [][]byte {
	if len(sizes) == 0 {
		return [][]byte{src}
	}
	var ps [][]byte
	for i := 0; len(src) > 0; i++ {
		n := min(len(src), max(1, int(sizes[i%len(sizes)])))
		ps = append(ps, src[:n])
		src = src[n:]
	}
	return ps
}

// blockFuzzSeeds are real-world shapes for both block fuzz targets.
var blockFuzzSeeds = []string{
	".\r\n",
	".\n",
	"Hello,\r\n\r\nA line.\r\n..signature\r\n-- \r\nme\r\n.\r\n",
	"=ybegin part=1 line=128 size=300 name=x.bin\r\n=ypart begin=1 end=300\r\n..\xc2\xa0=J\x8f\r\n...\r\n=yend size=300 part=1 pcrc32=0badf00d\r\n.\r\n",
	"unix\nline\n..dots\n.\n224 next\r\n",
	"a\rb\r\n.\rx\r\n.\r\r\n.\r\n",
	"0 12345 article\r\n.\r\n223 pipelined\r\n",
	"no terminator\r\n.",
}

func FuzzBlockDecode(f *testing.F) {
	for i, s := range blockFuzzSeeds {
		f.Add([]byte(s), uint16(0), []byte{byte(i + 1)})
		f.Add([]byte(s), uint16(8), []byte{1, 2, 3})
	}
	f.Fuzz(func(t *testing.T, data []byte, maxLine uint16, sizes []byte) {
		// Small limits exercise the limit; 0 is DefaultMaxLine.
		want := refDecode(data, int(maxLine))
		check := func(how string, got decoded) {
			t.Helper()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s of %q (maxLine %d, sizes %v): (-reference +got)\n%s", how, data, maxLine, sizes, diff)
			}
		}
		ps := cutBy(data, sizes)
		check("Decode whole", decodePieces(t, int(maxLine), [][]byte{data}))
		check("Decode in pieces", decodePieces(t, int(maxLine), ps))
		check("DecodeInPlace in pieces", decodePiecesInPlace(t, int(maxLine), cutBy(data, sizes)))
		readSize := 1
		if len(sizes) > 0 {
			readSize = max(1, int(sizes[0]))
		}
		check("BlockReader", readBlock(t, int(maxLine), readSize, data, cutBy(data, sizes)))
	})
}

func FuzzBlockRoundTrip(f *testing.F) {
	for i, s := range blockFuzzSeeds {
		f.Add([]byte(s), []byte{byte(i + 1)})
	}
	f.Add([]byte("...\n..\r\n."), []byte{1})
	f.Add([]byte("trailing CR\r"), []byte{})
	f.Fuzz(func(t *testing.T, x, sizes []byte) {
		enc := AppendBlock(nil, x)
		if got := encodePieces(cutBy(x, sizes)); !bytes.Equal(enc, []byte(got)) {
			t.Fatalf("Append in pieces %v of %q gave %q, AppendBlock %q", sizes, x, got, enc)
		}
		if got := writeBlock(t, cutBy(x, sizes)); !bytes.Equal(enc, []byte(got)) {
			t.Fatalf("BlockWriter in pieces %v of %q gave %q, AppendBlock %q", sizes, x, got, enc)
		}
		checkRoundTrip(t, x, enc)
		// And in pieces, with a response pipelined after the block.
		src := append(append([]byte(nil), enc...), "205 bye\r\n"...)
		whole := decodePieces(t, len(enc), [][]byte{src})
		if diff := cmp.Diff(whole, decodePieces(t, len(enc), cutBy(src, sizes))); diff != "" {
			t.Fatalf("decoding %q in pieces %v: (-whole +pieces)\n%s", src, sizes, diff)
		}
	})
}
