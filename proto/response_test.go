package proto

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseResponse(t *testing.T) {
	tests := []struct {
		line    string
		want    Response
		wantErr string
	}{
		{line: "200 news.example.com InterNetNews server INN 2.7.1 ready (transit mode)\r\n",
			want: Response{Code: 200, Text: "news.example.com InterNetNews server INN 2.7.1 ready (transit mode)"}},
		{line: "238 <a@b>\r\n", want: Response{Code: 238, Text: "<a@b>"}},
		{line: "205\r\n", want: Response{Code: 205}},
		{line: "205", want: Response{Code: 205}},
		{line: "401 MODE-READER\n", want: Response{Code: 401, Text: "MODE-READER"}},            // bare LF tolerated
		{line: "211\t3 1 3 misc.test\r\n", want: Response{Code: 211, Text: "3 1 3 misc.test"}}, // tab tolerated
		{line: "281 \r\n", want: Response{Code: 281, Text: ""}},
		{line: "", wantErr: "shorter than a status code"},
		{line: "20\r\n", wantErr: "shorter than a status code"},
		{line: "2x0 hi\r\n", wantErr: "not three digits"},
		{line: "600 nope\r\n", wantErr: "outside 1-5"},
		{line: "099 nope\r\n", wantErr: "outside 1-5"},
		{line: "2000 four digits\r\n", wantErr: "no space after status code"},
		{line: "+OK pop3\r\n", wantErr: "not three digits"},
	}
	for _, tc := range tests {
		got, err := ParseResponse([]byte(tc.line))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseResponse(%q) error = %v; want it to mention %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseResponse(%q): %v", tc.line, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseResponse(%q) (-want +got):\n%s", tc.line, diff)
		}
	}
}

func TestMultiLine(t *testing.T) {
	tests := []struct {
		verb string
		code int
		want bool
	}{
		{"CAPABILITIES", 101, true},
		{"GROUP", 211, false}, // RFC 3977 §6.1.1: one line
		{"LISTGROUP", 211, true},
		{"LIST", 215, true},
		{"ARTICLE", 220, true},
		{"HEAD", 221, true},
		{"XHDR", 221, true},
		{"BODY", 222, true},
		{"STAT", 223, false},
		{"OVER", 224, true},
		{"XOVER", 224, true},
		{"HDR", 225, true},
		{"NEWNEWS", 230, true},
		{"NEWGROUPS", 231, true},
		{"HELP", 100, true},
		{"CHECK", 238, false},
		{"TAKETHIS", 239, false},
		{"IHAVE", 335, false},
		{"BODY", 430, false},
		{"ARTICLE", 222, false}, // a code that does not belong to the command
	}
	for _, tc := range tests {
		if got := MultiLine(tc.verb, tc.code); got != tc.want {
			t.Errorf("MultiLine(%s, %d) = %v; want %v", tc.verb, tc.code, got, tc.want)
		}
	}
}

func TestStreamID(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"<a@b>", "<a@b>"},
		{"<a@b> Send it", "<a@b>"},
		{"<a@b>\tDuplicate", "<a@b>"},
		{"", ""},
	} {
		if got := (Response{Code: 238, Text: tc.text}).StreamID(); got != tc.want {
			t.Errorf("StreamID(%q) = %q; want %q", tc.text, got, tc.want)
		}
	}
}

func TestParseGroupResponse(t *testing.T) {
	got, err := ParseGroupResponse(Response{Code: 211, Text: "1234 3000234 3002322 misc.test"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(GroupInfo{Count: 1234, Low: 3000234, High: 3002322, Name: "misc.test"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var re *ResponseError
	if _, err := ParseGroupResponse(Response{Code: 411, Text: "No such group"}); !errors.As(err, &re) || re.Resp.Code != 411 {
		t.Errorf("411: error %v; want a *ResponseError with the response", err)
	}
	for _, text := range []string{"1 2 3", "x 1 2 g", "1 -1 2 g", "1 1 99999999999999999999 g"} {
		if _, err := ParseGroupResponse(Response{Code: 211, Text: text}); err == nil {
			t.Errorf("211 %q: no error", text)
		}
	}
}

func TestParseArticleResponse(t *testing.T) {
	got, err := ParseArticleResponse(Response{Code: 222, Text: "0 <part1of50.abc123@news.example.com>"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ArticleInfo{Number: 0, MessageID: "<part1of50.abc123@news.example.com>"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := ParseArticleResponse(Response{Code: 430, Text: "No such article"}); err == nil {
		t.Error("430: no error")
	}
	if _, err := ParseArticleResponse(Response{Code: 220, Text: "12"}); err == nil {
		t.Error("220 without message-id: no error")
	}
}

func TestAppendResponse(t *testing.T) {
	if got := string(AppendResponse(nil, 203, "Streaming permitted")); got != "203 Streaming permitted\r\n" {
		t.Errorf("got %q", got)
	}
	if got := string(AppendResponse([]byte("x"), 205, "")); got != "x205\r\n" {
		t.Errorf("got %q", got)
	}
}

// FuzzResponse checks that any line ParseResponse accepts formats back to a
// line that parses to the same response, and that accepted codes are
// three digits with class 1-5.
func FuzzResponse(f *testing.F) {
	for _, s := range []string{
		"200 news.example.com InterNetNews server INN 2.7.1 ready (transit mode)\r\n",
		"238 <a@b>\r\n", "439 <x@y> Duplicate\r\n", "205\r\n", "401 MODE-READER\n",
		"111 20261121225300\r\n", "2x0\r\n", "", "500\t\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseResponse(line)
		if err != nil {
			return
		}
		if r.Code < 100 || r.Code > 599 {
			t.Fatalf("code %d out of range from %q", r.Code, line)
		}
		wire := AppendResponse(nil, r.Code, r.Text)
		r2, err := ParseResponse(wire)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", wire, err)
		}
		if r2 != r {
			t.Fatalf("round trip %q -> %+v -> %q -> %+v", line, r, wire, r2)
		}
	})
}
