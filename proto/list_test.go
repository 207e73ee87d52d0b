package proto

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseActiveLine(t *testing.T) {
	tests := []struct {
		line    string
		want    ActiveGroup
		wantErr string
	}{
		// As INN 2.7 sends LIST ACTIVE.
		{"misc.test 0000000012 0000000001 y\r\n", ActiveGroup{"misc.test", 12, 1, "y"}, ""},
		{"control.cancel 0000000000 0000000001 n", ActiveGroup{"control.cancel", 0, 1, "n"}, ""},
		{"comp.lang.c++.moderated 0000000005 0000000002 m", ActiveGroup{"comp.lang.c++.moderated", 5, 2, "m"}, ""},
		{"local.nofeed 0000000000 0000000001 x", ActiveGroup{"local.nofeed", 0, 1, "x"}, ""},
		{"junk 0000000000 0000000001 j", ActiveGroup{"junk", 0, 1, "j"}, ""},
		{"old.name 0000000000 0000000001 =new.name", ActiveGroup{"old.name", 0, 1, "=new.name"}, ""},
		{"alt.test\t99\t3\ty", ActiveGroup{"alt.test", 99, 3, "y"}, ""},
		{"misc.test 12 1", ActiveGroup{}, "3 fields, want group high low status"},
		{"misc.test 12 1 y extra", ActiveGroup{}, "5 fields"},
		{"misc.test 12 1 z", ActiveGroup{}, `unknown status "z"`},
		{"misc.test 12 1 =", ActiveGroup{}, "newsgroup name is empty"},
		{"misc.test 12 1 =bad..name", ActiveGroup{}, "empty component"},
		{"misc.test x 1 y", ActiveGroup{}, "high: bad article number"},
		{"misc.test 1 -1 y", ActiveGroup{}, "low: bad article number"},
		{"misc..test 1 1 y", ActiveGroup{}, "empty component"},
	}
	for _, tc := range tests {
		got, err := ParseActiveLine([]byte(tc.line))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseActiveLine(%q) error = %v, want %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" || err != nil {
			t.Errorf("ParseActiveLine(%q) err=%v diff:\n%s", tc.line, err, diff)
		}
	}
	if a := (ActiveGroup{Status: "=new.name"}).AliasOf(); a != "new.name" {
		t.Errorf("AliasOf = %q", a)
	}
	if a := (ActiveGroup{Status: "y"}).AliasOf(); a != "" {
		t.Errorf("AliasOf(y) = %q", a)
	}
	if got := string(AppendActiveLine(nil, ActiveGroup{"misc.test", 12, 1, "y"})); got != "misc.test 0000000012 0000000001 y\r\n" {
		t.Errorf("AppendActiveLine = %q", got)
	}
	if got := string(AppendActiveLine(nil, ActiveGroup{"big", 12345678901, 1, "n"})); got != "big 12345678901 0000000001 n\r\n" {
		t.Errorf("AppendActiveLine(big) = %q", got)
	}
}

func FuzzActiveLine(f *testing.F) {
	f.Add([]byte("misc.test 0000000012 0000000001 y"), "misc.test", int64(12), int64(1), "y")
	f.Add([]byte("old.name 0000000000 0000000001 =new.name"), "a.b", int64(0), int64(0), "=c.d")
	f.Add([]byte("junk 0 1 j"), "junk", int64(1<<40), int64(1), "j")
	f.Fuzz(func(t *testing.T, line []byte, name string, high, low int64, status string) {
		if g, err := ParseActiveLine(line); err == nil {
			g2, err := ParseActiveLine(AppendActiveLine(nil, g))
			if err != nil || g2 != g {
				t.Fatalf("parse(append(parse(%q))) = %+v, %v; want %+v", line, g2, err, g)
			}
		}
		x := ActiveGroup{name, high, low, status}
		if ValidGroupName(name) != nil || validStatus(status) != nil || high < 0 || low < 0 {
			return
		}
		got, err := ParseActiveLine(AppendActiveLine(nil, x))
		if err != nil || got != x {
			t.Fatalf("parse(append(%+v)) = %+v, %v", x, got, err)
		}
	})
}

func TestParseNewsgroupsLine(t *testing.T) {
	tests := []struct {
		line    string
		want    GroupDescription
		wantErr string
	}{
		{"misc.test\tFor testing of network software.  Very boring.\r\n", GroupDescription{"misc.test", "For testing of network software.  Very boring."}, ""},
		{"alt.test   Testing (Moderated)", GroupDescription{"alt.test", "Testing (Moderated)"}, ""},
		{"fr.test\t\t\tTests en français", GroupDescription{"fr.test", "Tests en français"}, ""},
		{"local.nodesc", GroupDescription{"local.nodesc", ""}, ""},
		{"local.nodesc\t", GroupDescription{"local.nodesc", ""}, ""},
		{"", GroupDescription{}, "empty"},
		{"\tno name", GroupDescription{}, "starts with whitespace"},
		{"a.b desc\x00", GroupDescription{}, "control octet 0x00"},
	}
	for _, tc := range tests {
		got, err := ParseNewsgroupsLine([]byte(tc.line))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseNewsgroupsLine(%q) error = %v, want %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" || err != nil {
			t.Errorf("ParseNewsgroupsLine(%q) err=%v diff:\n%s", tc.line, err, diff)
		}
	}
	if got := string(AppendNewsgroupsLine(nil, GroupDescription{"a.b", "x\ny"})); got != "a.b\tx y\r\n" {
		t.Errorf("AppendNewsgroupsLine = %q", got)
	}
}

func FuzzNewsgroupsLine(f *testing.F) {
	f.Add([]byte("misc.test\tFor testing of network software.  Very boring."), "misc.test", "desc")
	f.Add([]byte("local.nodesc"), "a", "")
	f.Add([]byte("x  \t y"), "a.b", "\tlead")
	f.Fuzz(func(t *testing.T, line []byte, name, desc string) {
		if g, err := ParseNewsgroupsLine(line); err == nil {
			g2, err := ParseNewsgroupsLine(AppendNewsgroupsLine(nil, g))
			if err != nil || g2 != g {
				t.Fatalf("parse(append(parse(%q))) = %+v, %v; want %+v", line, g2, err, g)
			}
		}
		if name == "" || strings.ContainsAny(name, " \t\r\n\x00") {
			return
		}
		got, err := ParseNewsgroupsLine(AppendNewsgroupsLine(nil, GroupDescription{name, desc}))
		wantDesc := strings.TrimLeft(strings.NewReplacer("\r", " ", "\n", " ", "\x00", " ").Replace(desc), " \t")
		if err != nil || got != (GroupDescription{name, wantDesc}) {
			t.Fatalf("round trip of %q %q = %+v, %v", name, desc, got, err)
		}
	})
}

func TestParseListHeadersLine(t *testing.T) {
	tests := []struct{ line, want, wantErr string }{
		{"Subject\r\n", "Subject", ""},
		{":", ":", ""},
		{":bytes", ":bytes", ""},
		{"", "", "empty"},
		{"Sub:ject", "", "colon inside"},
	}
	for _, tc := range tests {
		got, err := ParseListHeadersLine([]byte(tc.line))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseListHeadersLine(%q) error = %v, want %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		if got != tc.want || err != nil {
			t.Errorf("ParseListHeadersLine(%q) = %q, %v", tc.line, got, err)
		}
		if back, _ := ParseListHeadersLine(AppendListHeadersLine(nil, got)); back != got {
			t.Errorf("round trip of %q = %q", got, back)
		}
	}
}
