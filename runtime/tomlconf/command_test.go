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
