package tomlconf

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCommand(t *testing.T) {
	mistakes := errors.Join(&Error{File: "x.toml", Line: 9, Key: "b", Msg: "bad"}, &Error{File: "x.toml", Line: 2, Key: "a", Msg: "worse"})
	load := func(file string, check bool) ([]byte, error) {
		switch file {
		case "bad.toml":
			return nil, mistakes
		case "gone.toml":
			return nil, errors.New("open gone.toml: no such file or directory")
		}
		return []byte("k = 1\n"), nil
	}
	tests := []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{nil, 0, "k = 1\n", ""},
		{[]string{"-config", "good.toml"}, 0, "k = 1\n", ""},
		{[]string{"-check", "good.toml"}, 0, "good.toml: ok\n", ""},
		{[]string{"-check", "bad.toml"}, 2, "", "x.toml:2: a: worse\nx.toml:9: b: bad\nprog config: 2 mistake(s); prog does not start with this file\n"},
		{[]string{"-check", "gone.toml"}, 2, "", "prog config: open gone.toml: no such file or directory\n"},
		{[]string{"-h"}, 0, "", ""},
		{[]string{"extra"}, 2, "", ""},
		{[]string{"-check", "a.toml", "-config", "b.toml"}, 2, "", ""},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		code := Command("prog", tc.args, &out, &errOut, load)
		if code != tc.code || out.String() != tc.stdout {
			t.Errorf("%q: exit %d, stdout %q; want %d, %q", tc.args, code, out.String(), tc.code, tc.stdout)
		}
		if tc.stderr != "" {
			if d := cmp.Diff(tc.stderr, errOut.String()); d != "" {
				t.Errorf("%q: stderr (-want +got):\n%s", tc.args, d)
			}
		}
	}
}

// TestAppendTOML: what AppendTOML prints reads back to the same values,
// tables and arrays of tables included; floats stay floats, sizes keep
// their unit only where it is exact.
func TestAppendTOML(t *testing.T) {
	type peer struct {
		Name string   `toml:"name"`
		High float64  `toml:"high"`
		Wait Duration `toml:"wait"`
		On   *bool    `toml:"on"`
	}
	type serve struct {
		Listen string `toml:"listen"`
		Plan   []struct {
			At string `toml:"at"`
		} `toml:"plan"`
	}
	type conf struct {
		Spool  string   `toml:"spool"`
		Max    Size     `toml:"max"`
		Odd    Size     `toml:"odd"`
		Groups []string `toml:"groups"`
		Skip   int      `toml:"-"`
		Peers  []peer   `toml:"peer"`
		Serve  serve    `toml:"serve"`
		Extra  *serve   `toml:"extra"`
	}
	yes := true
	in := conf{Spool: "/s \"q\"\n", Max: 64 << 20, Odd: 1000, Groups: []string{"*", "!junk"},
		Peers: []peer{{Name: "a", High: 95, Wait: Duration(90e9), On: &yes}, {Name: "b", High: 0.5}},
		Serve: serve{Listen: "127.0.0.1:1", Plan: []struct {
			At string `toml:"at"`
		}{{At: "08:00"}}}}
	text := AppendTOML(nil, &in)
	want := `spool = "/s \"q\"\n"
max = "64M"
odd = 1000
groups = ["*", "!junk"]

[[peer]]
name = "a"
high = 95.0
wait = "1m30s"
on = true

[[peer]]
name = "b"
high = 0.5
wait = "0s"

[serve]
listen = "127.0.0.1:1"

[[serve.plan]]
at = "08:00"
`
	if d := cmp.Diff(want, string(text)); d != "" {
		t.Errorf("AppendTOML (-want +got):\n%s", d)
	}
	var back conf
	if _, err := Decode("printed", text, &back); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if d := cmp.Diff(in, back); d != "" {
		t.Errorf("read back (-printed +read):\n%s", d)
	}
}
