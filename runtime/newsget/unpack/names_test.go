package unpack

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget/unpack/rartest"
)

func TestSets(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  []Set
	}{
		{"new naming, out of order, zero padded", []string{"a.part02.rar", "a.part01.rar", "a.part03.rar", "a.par2", "a.nfo"},
			[]Set{{Format: RAR, Volumes: []string{"a.part01.rar", "a.part02.rar", "a.part03.rar"}}}},
		{"old naming", []string{"b.r01", "b.rar", "b.r00"},
			[]Set{{Format: RAR, Volumes: []string{"b.rar", "b.r00", "b.r01"}}}},
		{"old volumes without their .rar are left alone", []string{"c.r00", "c.r01"}, nil},
		{"first new volume missing", []string{"d.part2.rar", "d.part3.rar"},
			[]Set{{Format: RAR, Volumes: []string{"d.part2.rar", "d.part3.rar"}, Problem: "volume 1 is missing (before d.part2.rar)"}}},
		{"gap in old naming", []string{"e.rar", "e.r00", "e.r02"},
			[]Set{{Format: RAR, Volumes: []string{"e.rar", "e.r00", "e.r02"}, Problem: "volume 1 is missing (before e.r02)"}}},
		{"7z single, 7z split, zip, upper case", []string{"F.7Z", "g.7z.002", "g.7z.001", "H.ZIP"},
			[]Set{
				{Format: SevenZip, Volumes: []string{"F.7Z"}},
				{Format: Zip, Volumes: []string{"H.ZIP"}},
				{Format: SevenZip, Volumes: []string{"g.7z.001", "g.7z.002"}},
			}},
		{"two sets side by side", []string{"x.part1.rar", "y.part1.rar", "x.part2.rar"},
			[]Set{{Format: RAR, Volumes: []string{"x.part1.rar", "x.part2.rar"}}, {Format: RAR, Volumes: []string{"y.part1.rar"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Sets(tc.files)); diff != "" {
				t.Errorf("Sets(%q) (-want +got):\n%s", tc.files, diff)
			}
		})
	}
}

func TestEntryPath(t *testing.T) {
	tests := []struct{ in, want, wantErr string }{
		{in: "a.txt", want: "a.txt"},
		{in: "dir/sub/a.txt", want: "dir/sub/a.txt"},
		{in: `win\dir\a.txt`, want: "win/dir/a.txt"},
		{in: "./a//b/./c", want: "a/b/c"},
		{in: ".hidden/x", want: "hidden/x"},
		{in: "bad\x00na\nme", want: "badname"},
		{in: "../a", wantErr: "refused"},
		{in: "a/../../b", wantErr: "refused"},
		{in: "/etc/passwd", wantErr: "absolute path refused"},
		{in: `\\server\share`, wantErr: "absolute path refused"},
		{in: "C:/x", wantErr: "drive letter refused"},
		{in: "./.", wantErr: "no name left"},
		{in: "", wantErr: "empty"},
		{in: strings.Repeat("d/", 40) + "f", wantErr: "deeper than"},
	}
	for _, tc := range tests {
		got, err := EntryPath(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("EntryPath(%q) = %q, %v; want error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != filepath.FromSlash(tc.want) {
			t.Errorf("EntryPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestPasswordFromName(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"Movie{{secret}}.nzb", "secret", true},
		{"/path/{{with}}/x{{pw 2}}.nzb", "pw 2", true},
		{"plain.nzb", "", false},
		{"open{{.nzb", "", false},
		{"empty{{}}.nzb", "", false},
	}
	for _, tc := range tests {
		got, ok := PasswordFromName(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("PasswordFromName(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzEntryPath(f *testing.F) {
	for _, s := range []string{"a", "../a", "a/../b", `C:\x`, "/x", "./.", ".a/..b/c..", "a\\..\\..\\b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		p, err := EntryPath(name)
		if err != nil {
			return
		}
		if !filepath.IsLocal(p) {
			t.Fatalf("EntryPath(%q) = %q, which is not inside the folder", name, p)
		}
	})
}

func FuzzSets(f *testing.F) {
	f.Add("a.part1.rar\na.part2.rar\nb.rar\nb.r00\nc.7z.001\nd.zip\ne.r05")
	f.Fuzz(func(t *testing.T, list string) {
		names := strings.Split(list, "\n")
		seen := map[string]bool{}
		for _, n := range names {
			seen[n] = true
		}
		for _, s := range Sets(names) {
			if len(s.Volumes) == 0 {
				t.Fatal("a set without volumes")
			}
			for _, v := range s.Volumes {
				if !seen[v] {
					t.Fatalf("volume %q not among the names", v)
				}
			}
		}
	})
}

// fuzzArchive writes data as an archive named name into a fresh folder
// inside a parent and unpacks it: hostile input must end in an error or a
// clean unpack, never a panic, and nothing may appear outside the folder.
func fuzzArchive(t *testing.T, name string, data []byte) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(context.Background(), dir, Options{MaxBytes: 1 << 20, MaxEntries: 100}); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Fatalf("unpacking wrote outside its folder: %v", ents)
	}
}

func FuzzRAR(f *testing.F) {
	vols := rartest.WriteRAR5([]rartest.Entry{{Name: "d", Dir: true}, {Name: "d/a", Data: []byte("hello")}, {Name: "../x", Data: []byte("x")}}, 0)
	f.Add(vols[0])
	f.Add(rartest.WriteRAR5([]rartest.Entry{{Name: "a", Data: bytes.Repeat([]byte("z"), 100)}}, 0)[0])
	f.Fuzz(func(t *testing.T, data []byte) { fuzzArchive(t, "x.rar", data) })
}

func FuzzZip(f *testing.F) {
	f.Add(zipWith(f, [][2]string{{"a/b.txt", "hello"}, {"../c", "no"}}))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzArchive(t, "x.zip", data) })
}

func Fuzz7z(f *testing.F) {
	// A bare signature, testdata/a.7z (7zz a a.7z a, with a = "hello"),
	// and the header this target found that made the library allocate
	// 32 GiB (TestHostile7zHeaders), refused by check7z since.
	seed := []byte("7z\xbc\xaf\x27\x1c\x00\x04")
	f.Add(seed)
	for _, name := range []string{"a.7z", "header_claims_268M_files.7z"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzArchive(t, "x.7z", data) })
}

// FuzzRAR5RoundTrip: whatever the test writer puts in stored RAR 5
// volumes, the library's reader gives back, through Dir, byte for byte
// (or Dir refuses the name, never writing outside the folder).
func FuzzRAR5RoundTrip(f *testing.F) {
	f.Add("a.bin", []byte("hello, volumes"), uint8(4))
	f.Add("d/e/f", bytes.Repeat([]byte{0}, 300), uint8(0))
	f.Fuzz(func(t *testing.T, name string, data []byte, per uint8) {
		rel, err := EntryPath(name)
		if err != nil || len(data) > 4096 {
			return
		}
		vols := rartest.WriteRAR5([]rartest.Entry{{Name: name, Data: data}}, int(per))
		dir := t.TempDir()
		for i, n := range rarVolumes("x", len(vols), false) {
			if err := os.WriteFile(filepath.Join(dir, n), vols[i], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		res, err := Dir(context.Background(), dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK() {
			t.Fatalf("%d volumes of %q (%d bytes): %v", len(vols), name, len(data), res.Archives[0].Err)
		}
		got, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%q: got %d bytes (%v), want %d", name, len(got), err, len(data))
		}
	})
}
