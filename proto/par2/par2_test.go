package par2

import (
	"crypto/md5"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto/gf16"
)

// memSet builds a set over the given files with sliceSize and nrec
// recovery slices computed by the definition; it returns the set, the
// input slices (padded) and the recovery data by exponent.
func memSet(t testing.TB, sliceSize int, nrec int, files map[string][]byte) (*Set, [][]byte, map[uint32][]byte) {
	t.Helper()
	var fs []File
	for name, data := range files {
		var f File
		f.Name, f.Length, f.MD5 = name, uint64(len(data)), md5.Sum(data)
		f.MD5_16 = md5.Sum(data[:min(len(data), 16384)])
		f.ID = FileID(f.MD5_16, f.Length, f.Name)
		for off := 0; off < len(data); off += sliceSize {
			sl := make([]byte, sliceSize)
			copy(sl, data[off:])
			f.Slices = append(f.Slices, SliceSum{MD5: md5.Sum(sl), CRC32: crc32.ChecksumIEEE(sl)})
		}
		fs = append(fs, f)
	}
	s := NewSet(uint64(sliceSize), fs, "test")
	var in [][]byte
	for _, f := range s.Files {
		data := files[f.Name]
		for off := 0; off < len(data); off += sliceSize {
			sl := make([]byte, sliceSize)
			copy(sl, data[off:])
			in = append(in, sl)
		}
	}
	rec := map[uint32][]byte{}
	for e := uint32(0); e < uint32(nrec); e++ {
		r := make([]byte, sliceSize)
		for i, d := range in {
			gf16.MulAdd(r, d, Coefficient(i, e))
		}
		rec[e] = r
		s.Recovery = append(s.Recovery, Recovery{Exponent: e, Length: uint64(sliceSize), Location: Location{Volume: int(e)}})
	}
	return s, in, rec
}

// packets returns the set's packets with its recovery slices, as a file.
func packets(s *Set, rec map[uint32][]byte) []byte {
	b := s.AppendCritical(nil)
	for e := uint32(0); e < uint32(len(rec)); e++ {
		b = AppendPacket(b, s.ID, TypeRecovery, append(binary.LittleEndian.AppendUint32(nil, e), rec[e]...))
	}
	return b
}

// collect parses a whole file of packets the way a reader does.
func collect(b []byte) (*Set, error) {
	var c Collector
	for off := 0; off+HeaderSize <= len(b); {
		h, err := ParseHeader(b[off:])
		if err != nil {
			return nil, err
		}
		if h.Length > uint64(len(b)-off) {
			return nil, errTruncated
		}
		body := b[off+HeaderSize : off+int(h.Length)]
		if err := h.Check(body); err != nil {
			return nil, err
		}
		if h.Type == TypeRecovery {
			e, err := ParseRecoveryExponent(body)
			if err != nil {
				return nil, err
			}
			c.AddRecovery(h.SetID, Recovery{Exponent: e, Length: uint64(len(body) - 4), Location: Location{Offset: int64(off + RecoveryDataOffset)}})
		} else if err := c.Add(h, body); err != nil {
			return nil, err
		}
		off += int(h.Length)
	}
	return c.Set()
}

var errTruncated = &strErr{"truncated packet"}

type strErr struct{ s string }

func (e *strErr) Error() string { return e.s }

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s, _, rec := memSet(t, 64, 3, map[string][]byte{"a.bin": randBytes(r, 300), "dir/b.rar": randBytes(r, 64), "c": randBytes(r, 1)})
	got, err := collect(packets(s, rec))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.Files, got.Files); diff != "" {
		t.Errorf("files after write and parse (-want +got):\n%s", diff)
	}
	if got.ID != s.ID || got.SliceSize != 64 || got.Slices != 7 || len(got.Recovery) != 3 || got.Creator != "test" {
		t.Errorf("set = id %x size %d slices %d recovery %d creator %q", got.ID, got.SliceSize, got.Slices, len(got.Recovery), got.Creator)
	}
	var sum int
	for i := range got.Slices {
		f, off, n := got.Slice(i)
		if off%64 != 0 || off+int64(n) > int64(got.Files[f].Length) {
			t.Errorf("Slice(%d) = file %d, offset %d, %d bytes", i, f, off, n)
		}
		sum += n
	}
	if sum != 365 {
		t.Errorf("slices hold %d bytes, want 365", sum)
	}
}

func TestConstants(t *testing.T) {
	// par2cmdline's database: 2^1, 2^2, 2^4, 2^7 (3, 5, 6 share factors with 65535).
	want := []uint16{2, 4, 16, 128, 256, 2048}
	for i, w := range want {
		if Constant(i) != w {
			t.Errorf("Constant(%d) = %d, want %d", i, Constant(i), w)
		}
	}
}

func TestRepairInMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s, in, rec := memSet(t, 32, 6, map[string][]byte{"x": randBytes(r, 32*9+6), "y": randBytes(r, 100)})
	for _, missing := range [][]int{{0}, {3}, {0, 1, 2}, {1, 5, 9, 12}, {0, 2, 4, 6, 8, 10}} {
		p, err := s.Plan(missing)
		if err != nil {
			t.Fatalf("Plan(%v): %v", missing, err)
		}
		// Syndromes, then the inverse.
		isMissing := map[int]bool{}
		for _, m := range missing {
			isMissing[m] = true
		}
		syn := make([][]byte, len(p.Use))
		for j, u := range p.Use {
			syn[j] = append([]byte(nil), rec[u.Exponent]...)
			for i, d := range in {
				if !isMissing[i] {
					gf16.MulAdd(syn[j], d, Coefficient(i, u.Exponent))
				}
			}
		}
		for m, i := range missing {
			out := make([]byte, 32)
			for j := range syn {
				gf16.MulAdd(out, syn[j], p.Inverse[m][j])
			}
			if string(out) != string(in[i]) {
				t.Errorf("missing %v: slice %d rebuilt wrong", missing, i)
			}
		}
	}
	if _, err := s.Plan([]int{0, 1, 2, 3, 4, 5, 6}); err == nil || !strings.Contains(err.Error(), "need 1 more") {
		t.Errorf("7 missing with 6 recovery slices: err = %v", err)
	}
}

func TestCheckRanges(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	data := randBytes(r, 1000)
	s, _, _ := memSet(t, 128, 0, map[string][]byte{"f": data})
	f := &s.Files[0] // 8 slices, the last 104 bytes + 24 padding
	parts := func(size int, damage ...int) []RangeCRC {
		var rs []RangeCRC
		for off := 0; off < len(data); off += size {
			end := min(off+size, len(data))
			c := crc32.ChecksumIEEE(data[off:end])
			for _, d := range damage {
				if d >= off && d < end {
					c ^= 1
				}
			}
			rs = append(rs, RangeCRC{Offset: int64(off), Length: int64(end - off), CRC32: c})
		}
		return rs
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for _, tc := range []struct {
		name  string
		known []RangeCRC
		want  []int
	}{
		{"parts of 300: clean, only the file end is common", parts(300), nil},
		{"parts of 256: clean", parts(256), nil},
		{"parts of 64: clean", parts(64), nil},
		{"one part: clean", parts(1000), nil},
		{"parts of 256, damage in part 2 -> slices 2,3", parts(256, 300), []int{2, 3}},
		{"parts of 300, damage -> nothing confirmed", parts(300, 10), all},
		{"no ranges", nil, all},
		{"a part missing", append(parts(256)[:1], parts(256)[2:]...), []int{2, 3, 4, 5}},
		{"last part missing", parts(256)[:3], []int{6, 7}},
		{"overlap", append(parts(256), RangeCRC{Offset: 0, Length: 10}), []int{0, 1}},
		{"past the end", append(parts(256)[:3], RangeCRC{Offset: 768, Length: 300, CRC32: 1}), []int{6, 7}},
	} {
		got := CheckRanges(f, 128, tc.known)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestHostile(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	s, _, rec := memSet(t, 64, 1, map[string][]byte{"a": randBytes(r, 200)})
	good := packets(s, rec)
	main := Main{SliceSize: 64, Files: [][16]byte{s.Files[0].ID}}
	lie := func(body []byte) []byte { // a main packet re-signed after editing
		return AppendPacket(nil, md5.Sum(body), TypeMain, body)
	}
	for _, tc := range []struct {
		name, want string
		file       []byte
	}{
		{"packet MD5 wrong", "MD5 mismatch", func() []byte { b := append([]byte(nil), good...); b[70] ^= 1; return b }()},
		{"length not a multiple of 4", "multiple of 4", func() []byte {
			b := append([]byte(nil), good...)
			binary.LittleEndian.PutUint64(b[8:], 65)
			return b
		}()},
		{"length past the file", "truncated", good[:len(good)-4]},
		{"huge file count", "recovery files but room", lie(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(nil, 64), 1<<31))},
		{"slice size zero", "slice size 0", lie(append(binary.LittleEndian.AppendUint64(nil, 0), 0, 0, 0, 0))},
		{"main set id lies", "not the MD5 of its body", AppendPacket(nil, s.ID, TypeMain, Main{SliceSize: 128}.AppendBody(nil))},
		{"no main", "no main packet", AppendPacket(nil, s.ID, TypeCreator, []byte("abcd"))},
		{"file without description", "no description", AppendPacket(nil, main.SetID(), TypeMain, main.AppendBody(nil))},
		{"slice count lies", "slice checksums for 200 bytes", func() []byte {
			m := Main{SliceSize: 128, Files: main.Files}
			id := m.SetID()
			b := AppendPacket(nil, id, TypeMain, m.AppendBody(nil))
			b = AppendPacket(b, id, TypeFileDesc, s.Files[0].FileDesc.AppendBody(nil))
			return AppendPacket(b, id, TypeIFSC, IFSC{FileID: s.Files[0].ID, Slices: s.Files[0].Slices}.AppendBody(nil))
		}()},
		{"recovery of the wrong size", "holds 4 bytes", AppendPacket(append([]byte(nil), good...), s.ID, TypeRecovery, []byte{5, 0, 0, 0, 1, 2, 3, 4})},
		{"unsafe name", "unsafe file name", func() []byte {
			d := FileDesc{Name: "../etc/passwd", Length: 1}
			d.ID = FileID(d.MD5_16, 1, d.Name)
			m := Main{SliceSize: 4, Files: [][16]byte{d.ID}}
			b := AppendPacket(nil, m.SetID(), TypeMain, m.AppendBody(nil))
			b = AppendPacket(b, m.SetID(), TypeFileDesc, d.AppendBody(nil))
			return AppendPacket(b, m.SetID(), TypeIFSC, IFSC{FileID: d.ID, Slices: make([]SliceSum, 1)}.AppendBody(nil))
		}()},
		{"conflicting checksums", "two different slice checksum", func() []byte {
			sl := append([]SliceSum(nil), s.Files[0].Slices...)
			sl[0].CRC32++
			return AppendPacket(append([]byte(nil), good...), s.ID, TypeIFSC, IFSC{FileID: s.Files[0].ID, Slices: sl}.AppendBody(nil))
		}()},
	} {
		_, err := collect(tc.file)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	// Unknown packets are skipped.
	b := AppendPacket(append([]byte(nil), good...), s.ID, typeOf("PAR 2.0\x00Future!!"), []byte("abcd"))
	if got, err := collect(b); err != nil || got.Skipped != 1 {
		t.Errorf("unknown packet: %v, skipped %v", err, got)
	}
}

// FuzzCollect feeds arbitrary packet files to the reader: it must not
// panic, and whatever set it accepts must be self-consistent.
func FuzzCollect(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 10))
	s, _, rec := memSet(f, 16, 2, map[string][]byte{"a": randBytes(r, 40), "b": randBytes(r, 7)})
	f.Add(packets(s, rec))
	f.Add(s.AppendCritical(nil))
	f.Add([]byte(Magic + "\x40\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := collect(b)
		if err != nil {
			return
		}
		total := 0
		for _, fl := range set.Files {
			if uint64(len(fl.Slices)) != (fl.Length+set.SliceSize-1)/set.SliceSize || fl.First != total {
				t.Fatalf("accepted inconsistent file %q", fl.Name)
			}
			total += len(fl.Slices)
		}
		if total != set.Slices || total > MaxSlices {
			t.Fatalf("accepted %d slices, counted %d", set.Slices, total)
		}
		// Writing the accepted set and reading it again gives the same files.
		again, err := collect(set.AppendCritical(nil))
		if err != nil || !cmp.Equal(again.Files, set.Files) {
			t.Fatalf("rewritten set differs: %v", err)
		}
	})
}

// FuzzPackets parses each packet type's body: no panics, and what parses
// writes back to the same bytes (up to padding).
func FuzzPackets(f *testing.F) {
	f.Add(byte(0), Main{SliceSize: 8, Files: [][16]byte{{1}}}.AppendBody(nil))
	f.Add(byte(1), FileDesc{Name: "x"}.AppendBody(nil))
	f.Add(byte(2), IFSC{Slices: make([]SliceSum, 2)}.AppendBody(nil))
	f.Fuzz(func(t *testing.T, kind byte, body []byte) {
		switch kind % 3 {
		case 0:
			if m, err := ParseMain(body); err == nil && string(m.AppendBody(nil)) != string(body) {
				t.Fatal("main packet does not round-trip")
			}
		case 1:
			if d, err := ParseFileDesc(body); err == nil {
				if d2, err := ParseFileDesc(d.AppendBody(nil)); err != nil || d2 != d {
					t.Fatalf("file description does not round-trip: %v", err)
				}
			}
		case 2:
			if p, err := ParseIFSC(body); err == nil && string(p.AppendBody(nil)) != string(body) {
				t.Fatal("IFSC does not round-trip")
			}
		}
	})
}

// FuzzCheckRanges: whatever the part and slice sizes, clean part CRCs
// confirm every slice, and a slice that overlaps a damaged part is never
// confirmed.
func FuzzCheckRanges(f *testing.F) {
	f.Add(uint16(1000), uint16(300), uint8(32), uint16(0))
	f.Add(uint16(4096), uint16(512), uint8(128), uint16(4095))
	f.Add(uint16(1), uint16(1), uint8(1), uint16(0))
	f.Fuzz(func(t *testing.T, size, partSize uint16, sliceWords uint8, bad uint16) {
		if size == 0 || partSize == 0 || sliceWords == 0 {
			return
		}
		r := rand.New(rand.NewPCG(uint64(size), uint64(partSize)))
		data := randBytes(r, int(size))
		ss := int(sliceWords) * 4
		s, _, _ := memSet(t, ss, 0, map[string][]byte{"f": data})
		var clean, damaged []RangeCRC
		badAt := int(bad) % len(data)
		var hit [2]int
		for off := 0; off < len(data); off += int(partSize) {
			end := min(off+int(partSize), len(data))
			c := crc32.ChecksumIEEE(data[off:end])
			clean = append(clean, RangeCRC{Offset: int64(off), Length: int64(end - off), CRC32: c})
			if badAt >= off && badAt < end {
				c ^= 0x80
				hit = [2]int{off, end}
			}
			damaged = append(damaged, RangeCRC{Offset: int64(off), Length: int64(end - off), CRC32: c})
		}
		if got := CheckRanges(&s.Files[0], uint64(ss), clean); got != nil {
			t.Fatalf("clean parts left slices %v unconfirmed", got)
		}
		got := map[int]bool{}
		for _, i := range CheckRanges(&s.Files[0], uint64(ss), damaged) {
			got[i] = true
		}
		for i := hit[0] / ss; i*ss < hit[1]; i++ {
			if !got[i] {
				t.Fatalf("slice %d overlaps the damaged part [%d,%d) but was confirmed", i, hit[0], hit[1])
			}
		}
	})
}
