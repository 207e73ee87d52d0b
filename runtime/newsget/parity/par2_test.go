package parity

import (
	"bytes"
	"context"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/proto/par2"
)

// writeFiles writes random files of the given sizes into dir and returns
// their contents by name.
func writeFiles(t *testing.T, dir string, seed uint64, sizes map[string]int) map[string][]byte {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed))
	out := map[string][]byte{}
	for name, n := range sizes {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// damage overwrites n bytes at off of dir/name.
func damage(t *testing.T, dir, name string, off int64, n int) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xAA}, n), off); err != nil {
		t.Fatal(err)
	}
}

// wantFiles checks dir holds exactly the original contents.
func wantFiles(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	for name, w := range want {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, w) {
			t.Errorf("%s after repair: %d bytes, err %v; want the original %d bytes", name, len(got), err, len(w))
		}
	}
}

func TestVerifyRepair(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	orig := writeFiles(t, dir, 1, map[string]int{"a.rar": 10000, "b.r00": 4096*3 + 17, "sub/c.r01": 20000, "d.nfo": 100})
	if _, err := Create(ctx, dir, "set", []string{"a.rar", "b.r00", "sub/c.r01", "d.nfo"}, 1024, 12, Options{}); err != nil {
		t.Fatal(err)
	}
	set, err := Open(ctx, filepath.Join(dir, "set.vol01+02.par2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Volumes) != 5 || len(set.Recovery) != 12 || set.Slices != 10+13+20+1 {
		t.Fatalf("set: %d volumes, %d recovery slices, %d slices", len(set.Volumes), len(set.Recovery), set.Slices)
	}
	rep, err := set.Verify(ctx, Options{})
	if err != nil || !rep.Whole() || rep.Read != 10000+4096*3+17+20000+100 {
		t.Fatalf("clean verify: whole %v, read %d, err %v", rep != nil && rep.Whole(), rep.Read, err)
	}

	damage(t, dir, "a.rar", 1500, 10)                                            // slice 1
	damage(t, dir, "b.r00", 4096*3+10, 7)                                        // the short last slice
	os.Remove(filepath.Join(dir, "d.nfo"))                                       // missing: 1 slice
	os.Rename(filepath.Join(dir, "sub/c.r01"), filepath.Join(dir, "4f9a1c.bin")) // obfuscated
	if err := os.Truncate(filepath.Join(dir, "a.rar"), 9000); err != nil {       // slices 8, 9 short
		t.Fatal(err)
	}
	rep, err = set.Verify(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Files {
		got = append(got, strings.TrimSpace(strings.Join([]string{f.Name, f.RenamedFrom, fmtInts(f.Damaged), map[bool]string{true: "missing"}[f.Missing]}, " ")))
	}
	want := map[string]bool{"a.rar  1,8,9": true, "b.r00  12": true, "sub/c.r01 4f9a1c.bin": true, "d.nfo   missing": true}
	for _, g := range got {
		if !want[g] {
			t.Errorf("verify found %q; want one of %v", g, want)
		}
	}
	if len(rep.Missing) != 5 || rep.Renamed != 1 {
		t.Fatalf("missing %v, renamed %d", rep.Missing, rep.Renamed)
	}
	// A small memory bound makes repair work window by window.
	fixed, err := set.Repair(ctx, rep, Options{Memory: 5 * 1024, Workers: 3})
	if err != nil || !fixed.Whole() {
		t.Fatalf("repair: %v", err)
	}
	wantFiles(t, dir, orig)
	if rep, err = set.Verify(ctx, Options{}); err != nil || !rep.Whole() {
		t.Fatalf("verify after repair: whole %v, %v", rep.Whole(), err)
	}
}

func fmtInts(xs []int) string {
	var b []string
	for _, x := range xs {
		b = append(b, strconv.Itoa(x))
	}
	return strings.Join(b, ",")
}

func TestRepairNotEnough(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFiles(t, dir, 2, map[string]int{"f": 8192})
	set, err := Create(ctx, dir, "f", []string{"f"}, 1024, 2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	damage(t, dir, "f", 0, 3000) // slices 0, 1, 2
	rep, err := set.Verify(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.Repair(ctx, rep, Options{}); err == nil || !strings.Contains(err.Error(), "need 1 more") {
		t.Fatalf("repair with 2 of 3 needed: %v", err)
	}
}

// TestQuickVerify: CRCs known from the download verify files without a
// read; a part whose CRC disagrees makes just its slices be read.
func TestQuickVerify(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	orig := writeFiles(t, dir, 3, map[string]int{"a": 50000, "b": 3000})
	set, err := Create(ctx, dir, "q", []string{"a", "b"}, 2048, 4, Options{})
	if err != nil {
		t.Fatal(err)
	}
	parts := func(data []byte, size int) []par2.RangeCRC {
		var rs []par2.RangeCRC
		for off := 0; off < len(data); off += size {
			end := min(off+size, len(data))
			rs = append(rs, par2.RangeCRC{Offset: int64(off), Length: int64(end - off), CRC32: crc32.ChecksumIEEE(data[off:end])})
		}
		return rs
	}
	// b was downloaded under an obfuscated name: its CRCs are known by it.
	if err := os.Rename(filepath.Join(dir, "b"), filepath.Join(dir, "0bfu5c4t3d")); err != nil {
		t.Fatal(err)
	}
	known := map[string][]par2.RangeCRC{"a": parts(orig["a"], 7000), "0bfu5c4t3d": parts(orig["b"], 1000)}
	rep, err := set.Verify(ctx, Options{Known: known})
	if err != nil || !rep.Whole() || rep.Read != 0 || rep.Quick != 2 || rep.Renamed != 1 {
		t.Fatalf("quick verify: whole %v, read %d, quick %d, %v", rep.Whole(), rep.Read, rep.Quick, err)
	}
	// Parts of 4096 bytes line up with every other slice: a bad part CRC
	// (the download saw damage there) sends its two slices to be read.
	known = map[string][]par2.RangeCRC{"a": parts(orig["a"], 4096), "b": known["0bfu5c4t3d"]}
	known["a"][3].CRC32 ^= 1
	rep, err = set.Verify(ctx, Options{Known: known})
	if err != nil || !rep.Whole() || rep.Read != 4096 || rep.Quick != 1 {
		t.Fatalf("quick verify with a bad part: whole %v, read %d, quick %d, %v", rep.Whole(), rep.Read, rep.Quick, err)
	}
}

// par2cmdline returns the path of Debian's par2, skipping without it.
func par2cmdline(t *testing.T) string {
	p, err := exec.LookPath("par2")
	if err != nil {
		t.Skip("par2 (par2cmdline) not installed: apt-get install par2")
	}
	return p
}

func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestInteropPar2cmdline: a set par2cmdline made is verified and repaired
// here, and par2cmdline finds the result whole; a set made here is
// repaired by par2cmdline.
func TestInteropPar2cmdline(t *testing.T) {
	bin := par2cmdline(t)
	ctx := context.Background()
	dir := t.TempDir()
	orig := writeFiles(t, dir, 4, map[string]int{"one.bin": 300000, "two.bin": 123457, "three.bin": 5})
	run(t, dir, bin, "create", "-q", "-s65536", "-c12", "set.par2", "one.bin", "two.bin", "three.bin")
	damage(t, dir, "one.bin", 70000, 100000) // slices 1, 2
	os.Remove(filepath.Join(dir, "two.bin")) // 2 slices
	os.Rename(filepath.Join(dir, "three.bin"), filepath.Join(dir, "obfuscated"))
	set, err := Open(ctx, filepath.Join(dir, "set.par2"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := set.Verify(ctx, Options{})
	if err != nil || len(rep.Missing) != 4 || rep.Renamed != 1 {
		t.Fatalf("verify of par2cmdline's set: missing %v, renamed %d, %v", rep.Missing, rep.Renamed, err)
	}
	if _, err := set.Repair(ctx, rep, Options{}); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, dir, orig)
	run(t, dir, bin, "verify", "-q", "set.par2")

	dir2 := t.TempDir()
	orig2 := writeFiles(t, dir2, 5, map[string]int{"x.rar": 200000, "y.rar": 77777})
	if _, err := Create(ctx, dir2, "ours", []string{"x.rar", "y.rar"}, 16384, 8, Options{}); err != nil {
		t.Fatal(err)
	}
	run(t, dir2, bin, "verify", "-q", "ours.par2")
	damage(t, dir2, "x.rar", 0, 50000) // 4 slices
	damage(t, dir2, "y.rar", 70000, 10)
	run(t, dir2, bin, "repair", "-q", "ours.par2")
	wantFiles(t, dir2, orig2)
}

// TestDamagedVolumes: garbage before a packet and a damaged recovery
// packet are skipped; the packets after them are still found.
func TestDamagedVolumes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	orig := writeFiles(t, dir, 6, map[string]int{"f": 9000})
	if _, err := Create(ctx, dir, "v", []string{"f"}, 1024, 7, Options{}); err != nil {
		t.Fatal(err)
	}
	// v.vol3+4.par2 holds exponents 3..6 after the critical packets.
	vol := filepath.Join(dir, "v.vol3+4.par2")
	b, err := os.ReadFile(vol)
	if err != nil {
		t.Fatal(err)
	}
	idx := bytes.Index(b, []byte("PAR 2.0\x00RecvSlic"))
	b[idx+100] ^= 0xff                                           // exponent 3's data: its MD5 fails
	b = append([]byte("garbage, not a packet PAR2\x00PK"), b...) // resync needed from the start
	if err := os.WriteFile(vol, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "v.par2"))
	set, err := Open(ctx, vol)
	if err != nil {
		t.Fatal(err)
	}
	var exps []uint32
	for _, r := range set.Recovery {
		exps = append(exps, r.Exponent)
	}
	if want := []uint32{0, 1, 2, 4, 5, 6}; !slices.Equal(exps, want) || set.BadPackets != 1 {
		t.Fatalf("recovery exponents %v, bad packets %d; want %v and 1", exps, set.BadPackets, want)
	}
	// Six slices can still be rebuilt from what is left.
	damage(t, dir, "f", 0, 6*1024)
	rep, err := set.Verify(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.Repair(ctx, rep, Options{}); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, dir, orig)
}

// TestRepairLengths: a file longer than the set says is cut back, an
// empty protected file that went missing is recreated.
func TestRepairLengths(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	orig := writeFiles(t, dir, 7, map[string]int{"long": 5000, "empty": 0})
	set, err := Create(ctx, dir, "l", []string{"long", "empty"}, 1024, 2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "long"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("trailing junk"))
	f.Close()
	os.Remove(filepath.Join(dir, "empty"))
	rep, err := set.Verify(ctx, Options{})
	if err != nil || rep.Whole() || len(rep.Missing) != 0 {
		t.Fatalf("verify: whole %v, missing %v, %v", rep.Whole(), rep.Missing, err)
	}
	if _, err := set.Repair(ctx, rep, Options{}); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, dir, orig)
}

// TestRepairWindows: when the slices to rebuild do not fit in
// Options.Memory, repair goes over the slice length a window at a time.
func TestRepairWindows(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	orig := writeFiles(t, dir, 8, map[string]int{"w1": 300000, "w2": 100001})
	set, err := Create(ctx, dir, "w", []string{"w1", "w2"}, 65536, 4, Options{})
	if err != nil {
		t.Fatal(err)
	}
	damage(t, dir, "w1", 10, 70000) // slices 0, 1
	damage(t, dir, "w2", 100000, 1) // its last, short slice
	rep, err := set.Verify(ctx, Options{})
	if err != nil || len(rep.Missing) != 3 {
		t.Fatalf("verify: missing %v, %v", rep.Missing, err)
	}
	// 3 slices in 48 KiB: windows of 16 KiB, four of them per slice.
	if _, err := set.Repair(ctx, rep, Options{Memory: 3 * 16384, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, dir, orig)
}
