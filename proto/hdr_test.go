package proto

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHdrLine(t *testing.T) {
	tests := []struct {
		line    string
		want    HdrLine
		wantErr string
	}{
		{"1234 Re: testing\r\n", HdrLine{1234, "Re: testing"}, ""},
		{"0 <u6p1ad$3kq$1@news.example.org>", HdrLine{0, "<u6p1ad$3kq$1@news.example.org>"}, ""},
		{"5 (none)", HdrLine{5, "(none)"}, ""}, // INN XHDR for a missing field
		{"5", HdrLine{5, ""}, ""},
		{"5 ", HdrLine{5, ""}, ""},
		{"5\tx y", HdrLine{5, "x y"}, ""},
		{"5  leading", HdrLine{5, " leading"}, ""},
		{"", HdrLine{}, "bad article number"},
		{"abc def", HdrLine{}, `bad article number "abc"`},
		{"-1 x", HdrLine{}, "bad article number"},
		{"1 a\x00b", HdrLine{}, "control octet 0x00 at offset 3"},
		{"1 a\rb\r\n", HdrLine{}, "control octet 0x0d at offset 3"},
	}
	for _, tc := range tests {
		got, err := ParseHdrLine([]byte(tc.line))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseHdrLine(%q) error = %v, want %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" || err != nil {
			t.Errorf("ParseHdrLine(%q) err=%v diff:\n%s", tc.line, err, diff)
		}
	}
	if got := string(AppendHdrLine(nil, HdrLine{7, "a\r\nb"})); got != "7 a  b\r\n" {
		t.Errorf("AppendHdrLine = %q", got)
	}
}

func FuzzHdrLine(f *testing.F) {
	f.Add([]byte("1234 Re: testing"), int64(1), "Re: x")
	f.Add([]byte("0 <a@b>"), int64(0), "<a@b>")
	f.Add([]byte("5 (none)"), int64(1<<40), "")
	f.Fuzz(func(t *testing.T, line []byte, n int64, v string) {
		if h, err := ParseHdrLine(line); err == nil {
			h2, err := ParseHdrLine(AppendHdrLine(nil, h))
			if err != nil || h2 != h {
				t.Fatalf("parse(append(parse(%q))) = %+v, %v; want %+v", line, h2, err, h)
			}
		}
		if n < 0 {
			return
		}
		x := HdrLine{n, v}
		got, err := ParseHdrLine(AppendHdrLine(nil, x))
		want := HdrLine{n, strings.NewReplacer("\r", " ", "\n", " ", "\x00", " ").Replace(v)}
		if err != nil || got != want {
			t.Fatalf("parse(append(%+v)) = %+v, %v", x, got, err)
		}
	})
}
