package unpack

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget/unpack/rartest"
)

// pattern returns n bytes that differ from file to file (seed).
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

// writeFiles puts name -> contents into dir.
func writeFiles(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tree lists every file under dir (relative, sorted) with its size, so a
// test sees at once what was added or left behind.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, fmt.Sprintf("%s %d", filepath.ToSlash(rel), st.Size()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// wantFile checks a file's contents.
func wantFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: %d bytes differ from the %d put in the archive", path, len(got), len(want))
	}
}

// rarVolumes names the volumes of a RAR set: new style x.partN.rar or old
// style x.rar, x.r00, ...
func rarVolumes(base string, n int, old bool) []string {
	var names []string
	for i := 0; i < n; i++ {
		switch {
		case old && i == 0:
			names = append(names, base+".rar")
		case old:
			names = append(names, fmt.Sprintf("%s.r%02d", base, i-1))
		default:
			names = append(names, fmt.Sprintf("%s.part%02d.rar", base, i+1))
		}
	}
	return names
}

func TestRAR5Volumes(t *testing.T) {
	big, small := pattern(5000, 1), pattern(300, 2)
	entries := []rartest.Entry{{Name: "show", Dir: true}, {Name: "show/big.bin", Data: big}, {Name: "small.txt", Data: small}}
	vols := rartest.WriteRAR5(entries, 2000)
	if len(vols) < 3 {
		t.Fatalf("writer made %d volumes, want at least 3 (a file spanning volumes)", len(vols))
	}
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("old_naming=%v", old), func(t *testing.T) {
			dir := t.TempDir()
			names := rarVolumes("job", len(vols), old)
			files := map[string][]byte{"job.par2": []byte("par2 index"), "job.vol0+1.par2": []byte("par2 volume"), "notes.nfo": []byte("keep")}
			for i, n := range names {
				files[n] = vols[i]
			}
			writeFiles(t, dir, files)
			res, err := Dir(context.Background(), dir, Options{Cleanup: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Archives) != 1 || res.Archives[0].Err != nil {
				t.Fatalf("archives: %+v", res.Archives)
			}
			a := res.Archives[0]
			if diff := cmp.Diff([]string{"show/big.bin", "small.txt"}, a.Files); diff != "" {
				t.Errorf("unpacked files (-want +got):\n%s", diff)
			}
			wantFile(t, filepath.Join(dir, "show/big.bin"), big)
			wantFile(t, filepath.Join(dir, "small.txt"), small)
			want := []string{"notes.nfo 4", "show/big.bin 5000", "small.txt 300"}
			if diff := cmp.Diff(want, tree(t, dir)); diff != "" {
				t.Errorf("folder after unpack and cleanup (-want +got):\n%s", diff)
			}
			if len(res.Removed) != len(vols)+2 {
				t.Errorf("removed %v, want the %d volumes and 2 PAR2 files", res.Removed, len(vols))
			}
		})
	}
}

func TestRAR5Failures(t *testing.T) {
	data := pattern(3000, 3)
	vols := rartest.WriteRAR5([]rartest.Entry{{Name: "f.bin", Data: data}}, 1200)
	tests := []struct {
		name    string
		change  func(names []string, files map[string][]byte)
		wantErr string
	}{{
		name: "data byte flipped in the last volume: the CRC-32 catches it",
		change: func(names []string, files map[string][]byte) {
			v := files[names[2]]
			v[len(v)-20] ^= 0xff
		},
		wantErr: "checksum",
	}, {
		name:    "middle volume missing",
		change:  func(names []string, files map[string][]byte) { delete(files, names[1]) },
		wantErr: "volume 2 is missing",
	}, {
		name:    "last volume missing",
		change:  func(names []string, files map[string][]byte) { delete(files, names[2]) },
		wantErr: "x.part03.rar: no such file",
	}, {
		name: "last volume cut short",
		change: func(names []string, files map[string][]byte) {
			files[names[2]] = files[names[2]][:40]
		},
		wantErr: "unexpected EOF",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			names := rarVolumes("x", len(vols), false)
			files := map[string][]byte{"x.par2": []byte("p")}
			for i, n := range names {
				files[n] = bytes.Clone(vols[i])
			}
			tc.change(names, files)
			writeFiles(t, dir, files)
			before := tree(t, dir)
			res, err := Dir(context.Background(), dir, Options{Cleanup: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK() || !strings.Contains(fmt.Sprint(res.Archives[0].Err), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", res.Archives[0].Err, tc.wantErr)
			}
			if diff := cmp.Diff(before, tree(t, dir)); diff != "" {
				t.Errorf("a failed unpack must leave the folder as it was (-before +after):\n%s", diff)
			}
		})
	}
}

// zipWith writes a zip holding the given entries in order, by name.
func zipWith(t testing.TB, entries [][2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		w, err := zw.Create(e[0])
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e[1]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestZipSlipRefused(t *testing.T) {
	for _, name := range []string{"../evil.txt", "a/../../evil.txt", "/etc/evil.txt", `..\evil.txt`, `C:\evil.txt`} {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			writeFiles(t, dir, map[string][]byte{"x.zip": zipWith(t, [][2]string{{"good.txt", "fine"}, {name, "evil"}})})
			res, err := Dir(context.Background(), dir, Options{Cleanup: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK() || !strings.Contains(res.Archives[0].Err.Error(), "refused") {
				t.Fatalf("err = %v, want the entry refused", res.Archives[0].Err)
			}
			if diff := cmp.Diff([]string{"out/x.zip " + fmt.Sprint(len(mustRead(t, filepath.Join(dir, "x.zip"))))}, tree(t, parent)); diff != "" {
				t.Errorf("nothing may be written, in the folder or out of it (-want +got):\n%s", diff)
			}
		})
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestZipCorruptCRC(t *testing.T) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "f.txt", Method: zip.Store})
	w.Write([]byte("hello, stored world"))
	zw.Close()
	data := bytes.Replace(b.Bytes(), []byte("stored"), []byte("STORED"), 1)
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{"x.zip": data})
	res, err := Dir(context.Background(), dir, Options{Cleanup: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || !strings.Contains(res.Archives[0].Err.Error(), "checksum") {
		t.Fatalf("err = %v, want a checksum error", res.Archives[0].Err)
	}
	if diff := cmp.Diff([]string{fmt.Sprintf("x.zip %d", len(data))}, tree(t, dir)); diff != "" {
		t.Errorf("folder (-want +got):\n%s", diff)
	}
}

func TestRerun(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{"x.zip": zipWith(t, [][2]string{{"a.txt", "alpha"}, {"b.txt", "beta"}}), "a.txt": []byte("alpha")})
	res, err := Dir(context.Background(), dir, Options{})
	if err != nil || !res.OK() {
		t.Fatalf("err %v, archives %+v", err, res.Archives)
	}
	if diff := cmp.Diff([]string{"a.txt"}, res.Archives[0].Present); diff != "" {
		t.Errorf("already present (-want +got):\n%s", diff)
	}
	// The same again: everything present, nothing changes.
	res, err = Dir(context.Background(), dir, Options{})
	if err != nil || !res.OK() || len(res.Archives[0].Present) != 2 {
		t.Fatalf("second run: err %v, archives %+v", err, res.Archives)
	}
	// A file of the same name with other contents is never replaced.
	writeFiles(t, dir, map[string][]byte{"b.txt": []byte("BETA")})
	res, err = Dir(context.Background(), dir, Options{Cleanup: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || !strings.Contains(res.Archives[0].Err.Error(), "b.txt exists and differs") {
		t.Fatalf("err = %v, want b.txt exists and differs", res.Archives[0].Err)
	}
	wantFile(t, filepath.Join(dir, "b.txt"), []byte("BETA"))
	if _, err := os.Stat(filepath.Join(dir, "x.zip")); err != nil {
		t.Errorf("the archive must stay after a failed unpack: %v", err)
	}
}

func TestStaleStageRemoved(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{stagePrefix + "x.zip/half.bin": []byte("half")})
	if _, err := Dir(context.Background(), dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dir); len(got) != 0 {
		t.Errorf("left %v, want the stale staging folder gone", got)
	}
}

func TestLimits(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{"x.zip": zipWith(t, [][2]string{{"a", "12345"}, {"b", "67890"}, {"c", "x"}})})
	res, _ := Dir(context.Background(), dir, Options{MaxBytes: 8})
	if res.OK() || !strings.Contains(res.Archives[0].Err.Error(), "limit") {
		t.Errorf("MaxBytes 8: err = %v, want the limit", res.Archives[0].Err)
	}
	res, _ = Dir(context.Background(), dir, Options{MaxEntries: 2})
	if res.OK() || !strings.Contains(res.Archives[0].Err.Error(), "more than 2 entries") {
		t.Errorf("MaxEntries 2: err = %v", res.Archives[0].Err)
	}
	if diff := cmp.Diff([]string{tree(t, dir)[0]}, tree(t, dir)); diff != "" || len(tree(t, dir)) != 1 {
		t.Errorf("only the archive may remain: %v", tree(t, dir))
	}
}

// need7z skips a test when Debian's 7zip is not installed.
func need7z(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"7z", "7zz", "7za"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("7z, 7zz or 7za (Debian package 7zip) not installed: apt-get install 7zip")
	return ""
}

// run runs a command in dir and fails the test with its output.
func run(t testing.TB, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func Test7z(t *testing.T) {
	sz := need7z(t)
	src := t.TempDir()
	a, b := pattern(40000, 4), pattern(3000, 5)
	writeFiles(t, src, map[string][]byte{"d/a.bin": a, "b.bin": b})
	tests := []struct {
		name     string
		args     []string
		password string
		wantErr  string
		volumes  int
	}{
		{name: "plain", args: []string{"a", "x.7z", "d", "b.bin"}, volumes: 1},
		{name: "split", args: []string{"a", "-mx=0", "-v10k", "x.7z", "d", "b.bin"}, volumes: 5},
		{name: "encrypted headers, password given", args: []string{"a", "-psecret", "-mhe=on", "x.7z", "d", "b.bin"}, password: "secret", volumes: 1},
		{name: "encrypted, no password", args: []string{"a", "-psecret", "x.7z", "d", "b.bin"}, wantErr: "no password was given", volumes: 1},
		{name: "encrypted, wrong password", args: []string{"a", "-psecret", "x.7z", "d", "b.bin"}, password: "wrong", wantErr: "", volumes: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			writeFiles(t, work, map[string][]byte{"d/a.bin": a, "b.bin": b})
			run(t, work, sz, tc.args...)
			dir := t.TempDir()
			ents, _ := os.ReadDir(work)
			n := 0
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), "x.7z") {
					os.Rename(filepath.Join(work, e.Name()), filepath.Join(dir, e.Name()))
					n++
				}
			}
			if n != tc.volumes {
				t.Fatalf("7z made %d volumes, want %d", n, tc.volumes)
			}
			before := tree(t, dir)
			res, err := Dir(context.Background(), dir, Options{Password: tc.password, Cleanup: true})
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "encrypted, wrong password" || tc.wantErr != "" {
				if res.OK() || !strings.Contains(res.Archives[0].Err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", res.Archives[0].Err, tc.wantErr)
				}
				if diff := cmp.Diff(before, tree(t, dir)); diff != "" {
					t.Errorf("failed unpack changed the folder (-before +after):\n%s", diff)
				}
				return
			}
			if !res.OK() {
				t.Fatal(res.Archives[0].Err)
			}
			wantFile(t, filepath.Join(dir, "d/a.bin"), a)
			wantFile(t, filepath.Join(dir, "b.bin"), b)
			if diff := cmp.Diff([]string{"b.bin 3000", "d/a.bin 40000"}, tree(t, dir)); diff != "" {
				t.Errorf("folder (-want +got):\n%s", diff)
			}
		})
	}
}

func TestZipFromInfoZip(t *testing.T) {
	zipBin, err := exec.LookPath("zip")
	if err != nil {
		t.Skip("zip (Debian package zip) not installed: apt-get install zip")
	}
	work, dir := t.TempDir(), t.TempDir()
	a := pattern(20000, 6)
	writeFiles(t, work, map[string][]byte{"sub/a.bin": a, "c.txt": []byte("see")})
	run(t, work, zipBin, "-r", filepath.Join(dir, "x.zip"), "sub", "c.txt")
	res, err := Dir(context.Background(), dir, Options{Cleanup: true})
	if err != nil || !res.OK() {
		t.Fatalf("err %v archives %+v", err, res.Archives)
	}
	wantFile(t, filepath.Join(dir, "sub/a.bin"), a)
	if diff := cmp.Diff([]string{"c.txt 3", "sub/a.bin 20000"}, tree(t, dir)); diff != "" {
		t.Errorf("folder (-want +got):\n%s", diff)
	}
}

func TestFilesLimitsTheJob(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{
		"mine.zip": zipWith(t, [][2]string{{"m.txt", "m"}}), "mine.par2": []byte("p"),
		"other.zip": zipWith(t, [][2]string{{"o.txt", "o"}}), "other.par2": []byte("p"),
	})
	res, err := Dir(context.Background(), dir, Options{Cleanup: true, Files: []string{"mine.zip", "mine.par2"}})
	if err != nil || !res.OK() {
		t.Fatalf("err %v archives %+v", err, res.Archives)
	}
	if diff := cmp.Diff([]string{"mine.zip", "mine.par2"}, res.Removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	got := tree(t, dir)
	if diff := cmp.Diff([]string{"m.txt 1", "other.par2 1", got[2]}, got); diff != "" || !strings.HasPrefix(got[2], "other.zip") {
		t.Errorf("another job's files must stay (-want +got):\n%s", diff)
	}
}

// TestRARHeadersEncrypted: a RAR 5 archive whose headers are encrypted
// (an archive encryption header, type 4, after the signature) cannot be
// listed without a password; the error says where a password comes from.
func TestRARHeadersEncrypted(t *testing.T) {
	h := rartest.Vint(nil, 4) // archive encryption header
	h = rartest.Vint(h, 0)    // no extra area, no data
	h = rartest.Vint(h, 0)    // encryption version 0 (AES-256)
	h = rartest.Vint(h, 0)    // no password check value
	h = append(h, 15)         // KDF count
	h = append(h, bytes.Repeat([]byte{7}, 16)...)
	vol := append(append([]byte(nil), rartest.Signature...), rartest.Block(h)...)
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{"x.rar": vol})
	res, err := Dir(context.Background(), dir, Options{Cleanup: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || !strings.Contains(res.Archives[0].Err.Error(), "no password was given") {
		t.Fatalf("err = %v, want the password hint", res.Archives[0].Err)
	}
}

// TestArchiveBomb: a zip of 128 MiB of zeros (some 128 KiB packed) is
// refused before it fills the disk: its entry declares more than
// MaxRatio times the archive (and MinLimit), so not a byte is written,
// and nothing is left but the archive.
func TestArchiveBomb(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("zeros.bin")
	if err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	for range 128 {
		w.Write(zero)
	}
	zw.Close()
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{"bomb.zip": buf.Bytes()})
	res, err := Dir(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`unpack bomb.zip: entry "zeros.bin" of 134217728 bytes: the archive unpacks to more than its limit, `+
		`20 times its volumes' %d bytes (unpack_max_ratio), at least 67108864: an archive bomb?`, buf.Len())
	if res.OK() || res.Archives[0].Err.Error() != want {
		t.Errorf("err = %v\nwant %s", res.Archives[0].Err, want)
	}
	if res.Archives[0].Bytes != 0 {
		t.Errorf("%d bytes written before the refusal", res.Archives[0].Bytes)
	}
	if got := tree(t, dir); !cmp.Equal(got, []string{fmt.Sprintf("bomb.zip %d", buf.Len())}) {
		t.Errorf("left %v, want the archive alone", got)
	}
}
