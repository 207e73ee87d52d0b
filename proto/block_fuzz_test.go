package proto

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// blockCutBy cuts src into pieces whose lengths cycle through sizes (a 0 size is
// taken as 1); no sizes means one piece.
func blockCutBy(src, sizes []byte) [][]byte {
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
		// The "\n." searches agree with bytes.Index.
		if got, want := blockIndexNLDotSWAR(data), bytes.Index(data, []byte("\n.")); got != want {
			t.Fatalf("portable search of %q = %d, want %d", data, got, want)
		}
		if got, want := blockIndexNLDot(data), bytes.Index(data, []byte("\n.")); got != want {
			t.Fatalf("search of %q = %d, want %d", data, got, want)
		}
		// Small limits exercise the limit; 0 is DefaultMaxLine.
		want := refBlockDecode(data, int(maxLine))
		check := func(how string, got blockResult) {
			t.Helper()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s of %q (maxLine %d, sizes %v): (-reference +got)\n%s", how, data, maxLine, sizes, diff)
			}
		}
		ps := blockCutBy(data, sizes)
		check("Decode whole", blockDecodePieces(t, int(maxLine), [][]byte{data}))
		check("Decode in pieces", blockDecodePieces(t, int(maxLine), ps))
		check("DecodeInPlace in pieces", blockDecodePiecesInPlace(t, int(maxLine), blockCutBy(data, sizes)))
		readSize := 1
		if len(sizes) > 0 {
			readSize = max(1, int(sizes[0]))
		}
		check("BlockReader", blockReadAll(t, int(maxLine), readSize, data, blockCutBy(data, sizes)))
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
		if got := blockEncodePieces(blockCutBy(x, sizes)); !bytes.Equal(enc, []byte(got)) {
			t.Fatalf("Append in pieces %v of %q gave %q, AppendBlock %q", sizes, x, got, enc)
		}
		if got := blockWriteAll(t, blockCutBy(x, sizes)); !bytes.Equal(enc, []byte(got)) {
			t.Fatalf("BlockWriter in pieces %v of %q gave %q, AppendBlock %q", sizes, x, got, enc)
		}
		blockCheckRoundTrip(t, x, enc)
		// And in pieces, with a response pipelined after the block.
		src := append(append([]byte(nil), enc...), "205 bye\r\n"...)
		whole := blockDecodePieces(t, len(enc), [][]byte{src})
		if diff := cmp.Diff(whole, blockDecodePieces(t, len(enc), blockCutBy(src, sizes))); diff != "" {
			t.Fatalf("decoding %q in pieces %v: (-whole +pieces)\n%s", src, sizes, diff)
		}
	})
}
