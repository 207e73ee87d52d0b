package proto

import (
	"bytes"
	"hash/crc32"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// yencSeedBodies are real-world shapes of yEnc bodies for the decode fuzz
// targets (the files in testdata/fuzz add more).
var yencSeedBodies = []string{
	"=ybegin line=128 size=5 name=hello.txt\r\n" + "\x92\x8f\x96\x96\x99" + "\r\n=yend size=5 crc32=3610a686\r\n.\r\n",
	"=ybegin part=2 total=3 line=128 size=12 name=a b.bin\r\n=ypart begin=5 end=8\r\n..=J=}\r\n=\r\n@k\r\n=yend size=4 part=2 pcrc32=DEADBEEF\r\n.\r\n223 0 <x@y>\r\n",
	"=ybegin size=3 name=x\n \t\n=yend size=3\n.\n",
	"text\r\n=ybegin  size=2   name=x  \r\nkl  \r\n=yend size=2   \r\n..sig\r\n.\r\n",
	"=ybegin size=1 name=x\r\n.\rk\r\n=yend\r\n.\r",
}

// FuzzYencDecode: on any input the decoder never panics, agrees with the
// reference, and changes no byte outside what it decodes: the region it is
// given is exactly the part's size, inside a guarded buffer, and every
// byte after the decoded output must keep its value.
func FuzzYencDecode(f *testing.F) {
	for _, s := range yencSeedBodies {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ref := refYencDecode(body)
		got := streamYenc(t, body, []int{len(body) / 3, len(body) / 2}, kernAuto)
		if diff := cmp.Diff(ref, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("decoder differs from reference (-ref +got):\n%s", diff)
		}
		size := ref.Part.PartSize()
		if !ref.Part.HasHeader || size < 0 || size > 1<<20 {
			return
		}
		const pad = 64
		for _, kern := range yencTestKernels() {
			guard := bytes.Repeat([]byte{0x5a}, int(size)+2*pad)
			dst := guard[pad : pad : pad+int(size)]
			var d YencDecoder
			d.kern = kern
			pos := 0
			for pos < len(body) && !d.Done() {
				out, n, _ := d.Feed(dst, body[pos:])
				if n == 0 && !d.Done() {
					t.Fatalf("kernel %d: no progress at %d with the part's whole region", kern, pos)
				}
				dst = out
				pos += n
			}
			for i, c := range guard {
				if (i < pad || i >= pad+len(dst)) && c != 0x5a {
					t.Fatalf("kernel %d: byte %d outside the decoded output was written", kern, i-pad)
				}
			}
			if !bytes.Equal(dst, ref.Out) {
				t.Fatalf("kernel %d: region holds other bytes than the reference decoded", kern)
			}
		}
	})
}

// FuzzYencFastVsScalar: every kernel this CPU runs (scalar, AVX2, AVX-512)
// and the reference agree byte for byte, with the input split at fuzzed points.
// With header set, the input is the data lines of a part whose =ybegin
// declares enough room, so arbitrary bytes reach the data path.
func FuzzYencFastVsScalar(f *testing.F) {
	for _, s := range yencSeedBodies {
		f.Add([]byte(s), false, uint32(7), uint32(70))
	}
	f.Add(bytes.Repeat([]byte("kkkkkkkkkkkk=}kkkkkkkkkkkkkkkkkkkkkkkk\r\n..kkkkkk=\r\n=Jkkk"), 9), true, uint32(64), uint32(129))
	f.Fuzz(func(t *testing.T, body []byte, header bool, cut1, cut2 uint32) {
		if header {
			h := "=ybegin line=128 size=" + strconv.Itoa(len(body)) + " name=f\r\n"
			body = append([]byte(h), body...)
		}
		cuts := []int{int(cut1 % uint32(len(body)+1)), int(cut2 % uint32(len(body)+1))}
		if cuts[0] > cuts[1] {
			cuts[0], cuts[1] = cuts[1], cuts[0]
		}
		ref := refYencDecode(body)
		for _, kern := range yencTestKernels() {
			got := streamYenc(t, body, cuts, kern)
			if diff := cmp.Diff(ref, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("kernel %d differs from the reference (-ref +got):\n%s", kern, diff)
			}
		}
	})
}

// FuzzYencRoundTrip: decode(encode(x)) == x for any data, line length and
// part layout, with the wire bytes split at fuzzed points, and the CRCs
// verified.
func FuzzYencRoundTrip(f *testing.F) {
	f.Add([]byte("hello"), uint16(128), uint8(0), false, uint32(3), uint32(9))
	f.Add(bytes.Repeat([]byte{0xd6, 0xe0, 0xe3, 0x13, 0xdf, 0xf6, 0x04, 1, 2}, 40), uint16(16), uint8(2), true, uint32(100), uint32(101))
	f.Add(bytes.Repeat([]byte{0x04}, 300), uint16(127), uint8(1), true, uint32(0), uint32(1))
	f.Fuzz(func(t *testing.T, data []byte, line uint16, part uint8, keepDot bool, cut1, cut2 uint32) {
		opts := YencOptions{Name: "f.bin", Line: int(line%1000) + 1, KeepLeadingDot: keepDot, Wire: true}
		if part > 0 && len(data) > 0 {
			// The data is part `part` of a larger file.
			opts.Part, opts.Total, opts.Begin = int(part), int(part)+1, int64(part)*10+1
			opts.Size = opts.Begin - 1 + int64(len(data)) + 7
		}
		body := YencEncode(nil, data, opts)
		cuts := []int{int(cut1 % uint32(len(body)+1)), int(cut2 % uint32(len(body)+1))}
		if cuts[0] > cuts[1] {
			cuts[0], cuts[1] = cuts[1], cuts[0]
		}
		for _, kern := range yencTestKernels() {
			got := streamYenc(t, body, cuts, kern)
			if got.Err != "" || got.Verify != "" || !got.Done || got.Consumed != len(body) {
				t.Fatalf("kern=%d: err %q verify %q done %v consumed %d/%d", kern, got.Err, got.Verify, got.Done, got.Consumed, len(body))
			}
			if !bytes.Equal(got.Out, data) {
				t.Fatalf("kern=%d: decoded %q, want %q", kern, got.Out, data)
			}
			if got.Part.CRC != crc32.ChecksumIEEE(data) || got.Part.Offset() != max(opts.Begin, 1)-1 {
				t.Fatalf("kern=%d: crc %08x offset %d", kern, got.Part.CRC, got.Part.Offset())
			}
		}
	})
}
