package tomlconf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type level int

func (l *level) UnmarshalText(b []byte) error {
	if string(b) != "high" {
		return errors.New("not high")
	}
	*l = 1
	return nil
}

type peer struct {
	Name  string   `toml:"name"`
	Port  int      `toml:"port"`
	Hosts []string `toml:"hosts"`
}

type conf struct {
	Listen string `toml:"listen"`
	Level  level  `toml:"level"`
	Peers  []peer `toml:"peer"`
	Cache  struct {
		Size int `toml:"size"`
	} `toml:"cache"`
}

// TestDecodeErrors: each mistake is located at its line and key.
func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []Error
	}{
		{"syntax", "listen = \"a\"\nlevel = = 3\n",
			[]Error{{File: "f.toml", Line: 2, Msg: "unexpected character U+003D '=' at start of value"}}},
		{"unknown top key", "listen = \"a\"\n\nlisne = 1\n",
			[]Error{{File: "f.toml", Line: 3, Key: "lisne", Msg: "unknown key"}}},
		{"unknown keys joined", "lisne = 1\n[[peer]]\nname = \"x\"\nprot = 3\n",
			[]Error{{File: "f.toml", Line: 1, Key: "lisne", Msg: "unknown key"}, {File: "f.toml", Line: 4, Key: "peer.prot", Msg: "unknown key; did you mean port?"}}},
		{"wrong type", "[[peer]]\nname = \"x\"\nport = \"many\"\n",
			[]Error{{File: "f.toml", Line: 3, Key: "peer.port", Msg: "wrong type of value: want an integer, found a string"}}},
		{"wrong type top", "listen = 3\n",
			[]Error{{File: "f.toml", Line: 1, Key: "listen", Msg: "wrong type of value: want a string, found an integer"}}},
		{"wrong type in table", "[cache]\nsize = true\n",
			[]Error{{File: "f.toml", Line: 2, Key: "cache.size", Msg: "wrong type of value: want an integer, found true or false"}}},
		{"wrong type list", "[[peer]]\nname = \"x\"\nhosts = \"a\"\n",
			[]Error{{File: "f.toml", Line: 3, Key: "peer.hosts", Msg: "wrong type of value: want a list, found a string"}}},
		{"UnmarshalText refuses", "listen = \"a\"\nlevel = \"low\"\n",
			[]Error{{File: "f.toml", Line: 2, Key: "level", Msg: "not high"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c conf
			_, err := Decode("f.toml", []byte(tc.text), &c)
			if err == nil {
				t.Fatal("no error")
			}
			var got []Error
			for _, e := range Errors(err) {
				got = append(got, *e)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", d, err)
			}
		})
	}
}

// TestKeys: the index numbers [[array]] tables and Line falls back to the
// table of an absent key.
func TestKeys(t *testing.T) {
	text := "listen = \"a\"\n[[peer]]\nname = \"x\"\n\n[[peer]]\nname = \"y\"\nport = 5\n[cache]\nsize = 3\n"
	var c conf
	keys, err := Decode("f.toml", []byte(text), &c)
	if err != nil {
		t.Fatal(err)
	}
	want := Keys{"listen": 1, "peer[1]": 2, "peer[1].name": 3, "peer[2]": 5, "peer[2].name": 6, "peer[2].port": 7, "cache.size": 9}
	if d := cmp.Diff(want, keys); d != "" {
		t.Errorf("keys (-want +got):\n%s", d)
	}
	for _, tc := range []struct {
		key  string
		line int
		has  bool
	}{
		{"listen", 1, true},
		{"peer[2].port", 7, true},
		{"peer[1].port", 2, false},
		{"level", 0, false},
	} {
		if got := keys.Line(tc.key); got != tc.line {
			t.Errorf("Line(%q) = %d, want %d", tc.key, got, tc.line)
		}
		if got := keys.Has(tc.key); got != tc.has {
			t.Errorf("Has(%q) = %v, want %v", tc.key, got, tc.has)
		}
	}
	if got := keys.Indexed(7, "peer.port"); got != "peer[2].port" {
		t.Errorf("Indexed(7, peer.port) = %q", got)
	}
	if got := keys.Indexed(4, "peer.prot"); got != "peer.prot" {
		t.Errorf("Indexed(4, peer.prot) = %q", got)
	}
}

// TestErrorString pins the FILE:LINE: KEY: MESSAGE format.
func TestErrorString(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "f", Line: 3, Key: "k", Msg: "m"}, "f:3: k: m"},
		{Error{File: "f", Key: "k", Msg: "m"}, "f: k: m"},
		{Error{File: "f", Line: 2, Msg: "m"}, "f:2: m"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}

// FuzzDecode: any text decodes or fails with located *Error values whose
// lines lie within the text; keys' lines do too.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("listen = \"a\"\n[[peer]]\nname = \"x\"\nport = 1\n"))
	f.Add([]byte("listen = = 1\n"))
	f.Add([]byte("[cache]\nsize = \"big\"\nx.y.z = 1\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		var c conf
		keys, err := Decode("f.toml", text, &c)
		lines := 1 + bytes.Count(text, []byte("\n"))
		for k, l := range keys {
			if l < 1 || l > lines {
				t.Fatalf("key %q at line %d of %d", k, l, lines)
			}
		}
		if err == nil {
			return
		}
		es := Errors(err)
		if len(es) == 0 {
			t.Fatalf("error %v (%T) holds no *Error", err, err)
		}
		for _, e := range es {
			if e.File != "f.toml" || e.Line < 0 || e.Line > lines || !strings.HasPrefix(e.Error(), "f.toml") {
				t.Fatalf("bad error %+v for %q", e, text)
			}
		}
	})
}

// TestLoad: the file's name and text go to parse; a missing file says so.
func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.toml")
	if err := os.WriteFile(path, []byte("listen = \"a\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	parse := func(name string, text []byte) (string, error) { return name + " " + string(text), nil }
	got, err := Load(path, parse)
	if want := path + " listen = \"a\"\n"; err != nil || got != want {
		t.Errorf("Load = %q, %v; want %q", got, err, want)
	}
	_, err = Load(path+".missing", parse)
	if err == nil || !strings.HasPrefix(err.Error(), "config: open "+path+".missing") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// TestDecodeAll: every mistake of a file comes back at once, in the order
// of its lines, and the values of the right type are decoded.
func TestDecodeAll(t *testing.T) {
	text := "listen = 5\nlevel = \"low\"\nbogus = 1\n[cache]\nsize = \"big\"\n[[peer]]\nname = \"a\"\n[[peer]]\nname = \"b\"\nport = \"x\"\nprot = 1\n"
	var c conf
	keys, err := DecodeAll("f.toml", []byte(text), &c)
	var got []string
	for _, e := range Errors(err) {
		got = append(got, e.Error())
	}
	want := []string{
		"f.toml:1: listen: wrong type of value: want a string, found an integer",
		"f.toml:2: level: not high",
		"f.toml:3: bogus: unknown key",
		"f.toml:5: cache.size: wrong type of value: want an integer, found a string",
		"f.toml:10: peer[2].port: wrong type of value: want an integer, found a string",
		"f.toml:11: peer[2].prot: unknown key; did you mean port?",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mistakes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]peer{{Name: "a"}, {Name: "b"}}, c.Peers); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}
	if keys.Line("peer[2].port") != 10 || keys.Line("listen") != 1 {
		t.Errorf("keys %v: want the whole text's", keys)
	}
	// A syntax error stops at the first; a clean text decodes.
	if _, err := DecodeAll("f.toml", []byte("a = = 1\nb = = 2\n"), &c); len(Errors(err)) != 1 {
		t.Errorf("syntax: %v", err)
	}
	if _, err := DecodeAll("f.toml", []byte("listen = \"x\"\n"), &c); err != nil || c.Listen != "x" {
		t.Errorf("clean text: %v %+v", err, c)
	}
}

func FuzzDecodeAll(f *testing.F) {
	f.Add([]byte("listen = 5\nlevel = \"low\"\n[[peer]]\nport = \"x\"\nprot = 1\n"))
	f.Add([]byte("listen = [1,\n2]\nlevel = \"low\"\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		var c conf
		_, err := DecodeAll("f.toml", text, &c)
		lines := 1 + bytes.Count(text, []byte("\n"))
		if err != nil && len(Errors(err)) == 0 {
			t.Fatalf("error %v holds no *Error", err)
		}
		for _, e := range Errors(err) {
			if e.File != "f.toml" || e.Line < 0 || e.Line > lines {
				t.Fatalf("bad error %+v for %q", e, text)
			}
		}
	})
}

// TestTypoDistance: letters added, left out, changed or swapped with a
// neighbour count one each.
func TestTypoDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"listen", "listen", 0}, {"listne", "listen", 1}, {"lisen", "listen", 1}, {"listenn", "listen", 1},
		{"lusten", "listen", 1}, {"lisne", "listen", 2}, {"", "abc", 3}, {"per_pag", "per_page", 1},
	} {
		if got := typoDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("typoDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
