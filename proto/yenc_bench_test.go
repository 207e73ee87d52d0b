package proto

import (
	"math/rand/v2"
	"testing"
)

// yencBenchBody is a realistic article body: a 700 KiB part of random
// bytes (about 1.6% escapes), 128-character lines, in wire form.
func yencBenchBody() (body []byte, size int) {
	rng := rand.New(rand.NewPCG(42, 42))
	data := make([]byte, 700<<10)
	for i := range data {
		data[i] = byte(rng.UintN(256))
	}
	return YencEncode(nil, data, YencOptions{Name: "bench.bin", Part: 1, Total: 10, Size: 7 << 20, Wire: true}), len(data)
}

// BenchmarkYencDecode measures decode (+CRC) throughput in bytes of encoded
// input per second, for the scalar loop, the AVX2 kernel and the best kernel here.
func BenchmarkYencDecode(b *testing.B) {
	body, size := yencBenchBody()
	dst := make([]byte, 0, size)
	for _, bc := range []struct {
		name  string
		kern  uint8
		nocrc bool
	}{
		{"scalar", kernScalar, true},
		{"scalar+crc", kernScalar, false},
		{"avx2", kernAVX2, true},
		{"avx2+crc", kernAVX2, false},
		{"fast", kernAuto, true},
		{"fast+crc", kernAuto, false},
	} {
		if !yencKernelAvailable(bc.kern) {
			continue
		}
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			var d YencDecoder
			for b.Loop() {
				d.Reset()
				d.kern, d.nocrc = bc.kern, bc.nocrc
				out, n, err := d.Feed(dst, body)
				if err != nil || n != len(body) || len(out) != size {
					b.Fatal(err, n, len(out))
				}
			}
			if !bc.nocrc {
				if err := d.Verify(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
