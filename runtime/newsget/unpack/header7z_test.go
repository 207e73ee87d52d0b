package unpack

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bodgit/sevenzip"
	"github.com/google/go-cmp/cmp"
)

// archive7z wraps a plain header (starting with its id) in a signature
// and start header with the right CRC-32s, the header right after them.
func archive7z(header []byte) []byte { return archive7zPacked(nil, header) }

// archive7zPacked is archive7z with packed streams before the header (an
// encoded header's, or files').
func archive7zPacked(packed, header []byte) []byte {
	start := binary.LittleEndian.AppendUint64(nil, uint64(len(packed)))
	start = binary.LittleEndian.AppendUint64(start, uint64(len(header)))
	start = binary.LittleEndian.AppendUint32(start, crc32.ChecksumIEEE(header))
	b := append(bytes.Clone(signature7z), 0, 4)
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(start))
	return cat(b, start, packed, header)
}

// split7z is the inverse of archive7zPacked, for seeds from real
// archives: their packed streams and header.
func split7z(b []byte) (packed, header []byte) {
	next := binary.LittleEndian.Uint64(b[12:])
	return b[32 : 32+next], b[32+next:]
}

// num7z is a 7z number: a first byte whose leading ones say how many
// bytes follow; here always the 9-byte form, which the readers accept
// for any value.
func num7z(v uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte{0xff}, v)
}

// cat joins byte strings, for writing headers by hand.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// allocated runs f and returns how many bytes it allocated on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// maxRefusalAlloc is what refusing a hostile header may allocate: the
// header itself (small here), the signature search's buffer, the test's
// own folder and error strings. The library, unguarded, allocates GiBs
// for each of the headers below.
const maxRefusalAlloc = 4 << 20

// TestHostile7zHeaders: headers that claim counts the library would
// allocate for without bound are refused by name, quickly and in little
// memory; the folder is left as it was.
func TestHostile7zHeaders(t *testing.T) {
	saved, err := os.ReadFile(filepath.Join("testdata", "header_claims_268M_files.7z"))
	if err != nil {
		t.Fatal(err)
	}
	// A folder of one LZMA2 coder: properties byte p.
	lzma2Folder := func(p byte) []byte { return []byte{1, 0x21, 0x21, 1, p} } // 1 coder: flags (id of 1 byte, properties), id, properties
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{{
		// Found by Fuzz7z: its start header says the header is 74 bytes
		// at offset 9, but 9 are there: 01 05 ef ff bf ff 00 11 00, a
		// files info that claims 0x0fffbfff files (32 GiB of FileHeaders,
		// which the library allocates before it meets the end).
		name:    "saved input: 268,419,071 files in a header cut short",
		data:    saved,
		wantErr: "7z header refused: header at 9+74 bytes lies beyond the end of the archive (50 bytes)",
	}, {
		name:    "saved input with its start header mended",
		data:    archive7z(saved[32+9:]),
		wantErr: "7z header refused: it claims 268419071 entries, more than the limit of 100000",
	}, {
		name:    "2^32-1 files",
		data:    archive7z(cat([]byte{id7zHeader, id7zFilesInfo}, num7z(1<<32-1), []byte{0, 0})),
		wantErr: "it claims 4294967295 entries",
	}, {
		name: "2^32-1 pack streams with every CRC defined: 16 GiB of CRCs",
		data: archive7z(cat([]byte{id7zHeader, id7zMainStreamsInfo, id7zPackInfo}, num7z(0), num7z(1<<32-1),
			[]byte{id7zCRC, 1}, make([]byte, 64))),
		wantErr: "4294967295 pack digests would take more than the limit of 256 MiB",
	}, {
		name: "coder properties of 2 GiB",
		data: archive7z(cat([]byte{id7zHeader, id7zMainStreamsInfo, id7zUnpackInfo, id7zFolder, 1, 0, 1, 0x21, 0x21},
			num7z(1<<31), make([]byte, 16))),
		wantErr: "coder properties of 2147483648 bytes",
	}, {
		name: "a coder of 2^32-1 input streams: one reader each when opened",
		data: archive7z(cat([]byte{id7zHeader, id7zMainStreamsInfo, id7zUnpackInfo, id7zFolder, 1, 0, 1, 0x11, 0x00},
			num7z(1<<32-1), num7z(1), make([]byte, 16))),
		wantErr: "a coder of 4294967295 inputs",
	}, {
		name: "2^32-1 substreams with sizes: 32 GiB of sizes",
		data: archive7z(cat([]byte{id7zHeader, id7zMainStreamsInfo, id7zUnpackInfo, id7zFolder, 1, 0},
			lzma2Folder(16), []byte{id7zCodersUnpackSize, 5, id7zEnd},
			[]byte{id7zSubStreamsInfo, id7zNumUnpackStream}, num7z(1<<32-1), []byte{id7zSize}, make([]byte, 16))),
		wantErr: "4294967295 substream sizes would take more than the limit",
	}, {
		name: "an LZMA2 dictionary of 4 GiB",
		data: archive7z(cat([]byte{id7zHeader, id7zMainStreamsInfo, id7zUnpackInfo, id7zFolder, 1, 0},
			lzma2Folder(40), []byte{id7zCodersUnpackSize, 5, id7zEnd, id7zEnd, id7zEnd})),
		wantErr: "a folder whose decoders need 4096 MiB, more than the limit of 1024 MiB",
	}, {
		name:    "a header that lies past the end of the archive",
		data:    archive7z([]byte{id7zHeader, id7zEnd})[:33],
		wantErr: "beyond the end of the archive",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string][]byte{"hostile.7z": tc.data})
			var res *Result
			var err error
			n := allocated(func() { res, err = Dir(context.Background(), dir, Options{Cleanup: true}) })
			if err != nil {
				t.Fatal(err)
			}
			if res.OK() || !strings.Contains(res.Archives[0].Err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", res.Archives[0].Err, tc.wantErr)
			}
			if !strings.HasPrefix(res.Archives[0].Err.Error(), "unpack hostile.7z: ") {
				t.Errorf("err = %v, want it to name the archive", res.Archives[0].Err)
			}
			if n > maxRefusalAlloc {
				t.Errorf("refusing the header allocated %d bytes, want at most %d", n, maxRefusalAlloc)
			}
			if diff := cmp.Diff([]string{fmt.Sprintf("hostile.7z %d", len(tc.data))}, tree(t, dir)); diff != "" {
				t.Errorf("folder (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHostile7zBesideGood: a hostile 7z fails alone; the other archives
// of the folder unpack, and the process is there to see it.
func TestHostile7zBesideGood(t *testing.T) {
	saved, err := os.ReadFile(filepath.Join("testdata", "header_claims_268M_files.7z"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{"hostile.7z": saved, "good.zip": zipWith(t, [][2]string{{"g.txt", "good"}})})
	res, err := Dir(context.Background(), dir, Options{Cleanup: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range res.Archives {
		got[a.Name] = fmt.Sprint(a.Err)
	}
	want := map[string]string{
		"good.zip":   "<nil>",
		"hostile.7z": "unpack hostile.7z: 7z header refused: header at 9+74 bytes lies beyond the end of the archive (50 bytes)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("archives (-want +got):\n%s", diff)
	}
	wantFile(t, filepath.Join(dir, "g.txt"), []byte("good"))
}

// TestCheckDecoders: what the decoders of one folder may need, at most
// limits7z.decoder (1 GiB) in all.
func TestCheckDecoders(t *testing.T) {
	lzma := func(dict uint32) coder7z {
		return coder7z{id: method7zLZMA, props: binary.LittleEndian.AppendUint32([]byte{0x5d}, dict)}
	}
	ppmd := func(mem uint32) coder7z {
		return coder7z{id: method7zPPMd, props: binary.LittleEndian.AppendUint32([]byte{6}, mem)}
	}
	tests := []struct {
		name    string
		f       folder7z
		wantErr string // "" when accepted
	}{
		{name: "LZMA 64 MiB (7zz -mx9)", f: folder7z{coders: []coder7z{lzma(64 << 20)}, sizes: []uint64{1 << 40}}},
		{name: "LZMA 4 GiB claimed for 1000 bytes: the reader allocates 1000", f: folder7z{coders: []coder7z{lzma(1<<32 - 1)}, sizes: []uint64{1000}}},
		{name: "LZMA 1.5 GiB for 2 GiB of output", f: folder7z{coders: []coder7z{lzma(3 << 29)}, sizes: []uint64{2 << 30}}, wantErr: "1536 MiB"},
		{name: "LZMA with 3 bytes of properties", f: folder7z{coders: []coder7z{{id: method7zLZMA, props: []byte{1, 2, 3}}}, sizes: []uint64{1}}, wantErr: "not 5"},
		{name: "LZMA2 1 GiB", f: folder7z{coders: []coder7z{{id: method7zLZMA2, props: []byte{36}}}}},
		{name: "LZMA2 1.5 GiB", f: folder7z{coders: []coder7z{{id: method7zLZMA2, props: []byte{37}}}}, wantErr: "1536 MiB"},
		{name: "LZMA2 property 41", f: folder7z{coders: []coder7z{{id: method7zLZMA2, props: []byte{41}}}}, wantErr: "properties 29"},
		{name: "PPMd 192 MiB (7zz -m0=PPMd -mx9)", f: folder7z{coders: []coder7z{ppmd(192 << 20)}}},
		{name: "PPMd 4 GiB", f: folder7z{coders: []coder7z{ppmd(1<<32 - 1)}}, wantErr: "4095 MiB"},
		{name: "three LZMA2 of 512 MiB in one folder", f: folder7z{coders: []coder7z{{id: method7zLZMA2, props: []byte{34}}, {id: method7zLZMA2, props: []byte{34}}, {id: method7zLZMA2, props: []byte{34}}}},
			wantErr: "1536 MiB"},
		{name: "one zstd (7-Zip ZS)", f: folder7z{coders: []coder7z{{id: []byte{4, 0xf7, 0x11, 1}}}}},
		{name: "two zstd in one folder: 512 MiB windows each", f: folder7z{coders: []coder7z{{id: []byte{4, 0xf7, 0x11, 1}}, {id: []byte{4, 0xf7, 0x11, 1}}}}, wantErr: "1024 MiB, more than"},
		{name: "copy and BCJ need nothing", f: folder7z{coders: []coder7z{{id: method7zCopy}, {id: []byte{3, 3, 1, 3}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.checkDecoders(maxRARDictionary)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// Test7zHeaders: archives as Debian's 7zz writes them, with each kind of
// header (LZMA-encoded, the default; plain; encrypted), many files, many
// folders and other methods, pass the header check and unpack.
func Test7zHeaders(t *testing.T) {
	sz := need7z(t)
	files := map[string][]byte{}
	for i := range 600 {
		files[fmt.Sprintf("d%d/f%04d.txt", i%7, i)] = []byte(fmt.Sprintf("file %d\n", i))
	}
	files["big.bin"] = pattern(200000, 9)
	tests := []struct {
		name     string
		args     []string
		password string
		wantErr  string
	}{
		{name: "encoded header (default), 601 files", args: nil},
		{name: "plain header", args: []string{"-mhc=off"}},
		{name: "one folder a file", args: []string{"-ms=off"}},
		{name: "PPMd", args: []string{"-m0=PPMd"}},
		{name: "LZMA, BCJ2 filter", args: []string{"-m0=BCJ2", "-m1=LZMA", "-m2=LZMA", "-m3=LZMA", "-mb0:1", "-mb0s1:2", "-mb0s2:3"}},
		{name: "encrypted header, password given", args: []string{"-psecret", "-mhe=on"}, password: "secret"},
		{name: "encrypted header, no password", args: []string{"-psecret", "-mhe=on"}, wantErr: "no password was given"},
		{name: "encrypted header, wrong password", args: []string{"-psecret", "-mhe=on"}, password: "wrong", wantErr: "the password given does not open it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			work, dir := t.TempDir(), t.TempDir()
			writeFiles(t, work, files)
			args := append([]string{"a", filepath.Join(dir, "x.7z")}, tc.args...)
			run(t, work, sz, append(args, "big.bin", "d0", "d1", "d2", "d3", "d4", "d5", "d6")...)
			res, err := Dir(context.Background(), dir, Options{Password: tc.password, Cleanup: true})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" {
				if res.OK() || !strings.Contains(res.Archives[0].Err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", res.Archives[0].Err, tc.wantErr)
				}
				return
			}
			if !res.OK() {
				t.Fatal(res.Archives[0].Err)
			}
			if len(res.Archives[0].Files) != len(files) {
				t.Errorf("unpacked %d files, want %d", len(res.Archives[0].Files), len(files))
			}
			for name, data := range files {
				wantFile(t, filepath.Join(dir, name), data)
			}
		})
	}
}

// FuzzHeader7z: whatever check7z accepts, the library opens within the
// limits the check was given (what it allocates while reading the
// header: the cost model's limit, the header and the decoders of the
// encoded header, and fixed buffers); and the check itself never
// allocates much for what it refuses. The fuzzer writes the header and
// the packed streams before it; the CRC-32s are made right, so that its
// mutations reach the header's grammar.
func FuzzHeader7z(f *testing.F) {
	for _, name := range []string{"a.7z", "header_claims_268M_files.7z"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		packed, header := split7z(b)
		f.Add(packed, header)
	}
	f.Add([]byte(nil), cat([]byte{id7zHeader, id7zFilesInfo, 3, id7zName, 13, 0}, []byte("a\x00b\x00c\x00\x00\x00\x00\x00\x00"), []byte{0, 0}))
	f.Add([]byte("hello"), cat([]byte{id7zHeader, id7zMainStreamsInfo, id7zPackInfo, 0, 1, id7zSize, 5, id7zEnd, id7zUnpackInfo, id7zFolder, 1, 0},
		[]byte{1, 0x21, 0x21, 1, 16}, []byte{id7zCodersUnpackSize, 5, id7zEnd, id7zSubStreamsInfo, id7zNumUnpackStream, 2, id7zSize, 2, id7zCRC, 1},
		make([]byte, 8), []byte{id7zEnd, id7zEnd, id7zEnd}))
	// 50,000 empty files, each with its name: within the entry limit,
	// so only the cost model stands between them and the library.
	f.Add([]byte(nil), cat([]byte{id7zHeader, id7zFilesInfo}, num7z(50000),
		[]byte{id7zEmptyStream}, num7z(6250), bytes.Repeat([]byte{0xff}, 6250), []byte{id7zName}, num7z(200001), []byte{0},
		bytes.Repeat([]byte("a\x00\x00\x00"), 50000), []byte{0, 0}))
	// The entry limit is high so that the cost model, not it, is what the
	// fuzzer tries.
	lim := limits7z{entries: 1 << 20, header: 1 << 20, memory: 4 << 20, decoder: 4 << 20, aesCycles: 10}
	const slack = 2 << 20 // buffers: signature search, bufio, lzma state
	f.Fuzz(func(t *testing.T, packed, header []byte) {
		data := archive7zPacked(packed, header)
		var err error
		n := allocated(func() { err = check7z(bytes.NewReader(data), int64(len(data)), "pw", lim, nil) })
		if max := uint64(len(data)) + 2*lim.header + uint64(lim.memory) + lim.decoder + slack; n > max {
			t.Fatalf("check7z allocated %d bytes, more than %d (err %v)", n, max, err)
		}
		if err != nil {
			if !errors.Is(err, errHeader7z) {
				t.Fatalf("a refusal that does not say so: %v", err)
			}
			return
		}
		n = allocated(func() {
			defer func() { recover() }() // a panic is walk's to recover; memory is this test's subject
			sevenzip.NewReaderWithPassword(bytes.NewReader(data), int64(len(data)), "pw")
		})
		if max := lim.header + uint64(lim.memory) + lim.decoder + slack; n > max {
			t.Fatalf("check7z accepted a header that made the library allocate %d bytes, more than %d", n, max)
		}
	})
}

// BenchmarkOpen7z: what the header check costs beside the library's own
// opening of the same archive (7zz's defaults: an LZMA-encoded header;
// and an AES-encrypted one), 600 files.
func BenchmarkOpen7z(b *testing.B) {
	sz := need7z(b)
	work := b.TempDir()
	files := map[string][]byte{}
	for i := range 600 {
		files[fmt.Sprintf("d%d/f%04d.txt", i%7, i)] = []byte(fmt.Sprintf("file %d\n", i))
	}
	writeFiles(b, work, files)
	for _, tc := range []struct {
		name string
		args []string
	}{{"encoded", nil}, {"encrypted", []string{"-psecret", "-mhe=on"}}} {
		path := filepath.Join(work, tc.name+".7z")
		run(b, work, sz, append(append([]string{"a", path}, tc.args...), "d0", "d1", "d2", "d3", "d4", "d5", "d6")...)
		b.Run(tc.name+"/check", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := checkVolumes7z(path, "secret", defaultLimits7z(DefaultMaxEntries), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/library", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rc, err := sevenzip.OpenReaderWithPassword(path, "secret")
				if err != nil {
					b.Fatal(err)
				}
				rc.Close()
			}
		})
	}
}
