package newsfeed

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseChannelLine(t *testing.T) {
	tests := []struct {
		line    string
		want    ChannelLine
		wantErr string
	}{
		{"@0301000000000000000100000001@ <a@b> sink inn2", ChannelLine{"@0301000000000000000100000001@", "<a@b>", []string{"sink", "inn2"}}, ""},
		{"@01@ <a@b>", ChannelLine{"@01@", "<a@b>", []string{}}, ""},
		{"@01@\t<a@b>  sink\r", ChannelLine{"@01@", "<a@b>", []string{"sink"}}, ""},
		{"", ChannelLine{}, "want \"@token@ <message-id> site...\""},
		{"@01@", ChannelLine{}, "want \"@token@"},
		{"01 <a@b> sink", ChannelLine{}, "is not a storage token"},
		{"@0@1@ <a@b> sink", ChannelLine{}, "is not a storage token"},
		{"@01@ a@b sink", ChannelLine{}, "channel line"},
	}
	for _, tc := range tests {
		got, err := ParseChannelLine([]byte(tc.line))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want one containing %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.line, diff)
		}
	}
}

// FuzzParseChannelLine: a parsed line prints back to a line that parses
// to the same value.
func FuzzParseChannelLine(f *testing.F) {
	for _, s := range []string{"@0301000000000000000100000001@ <a@b> sink inn2", "@01@ <a@b>", "x", "@@ <> a", "@01@ <a@b>\tsink\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cl, err := ParseChannelLine(b)
		if err != nil {
			return
		}
		back := strings.Join(append([]string{cl.Token, cl.MessageID}, cl.Sites...), " ")
		again, err := ParseChannelLine([]byte(back))
		if err != nil {
			t.Fatalf("%q parsed to %+v, which prints as %q and fails: %v", b, cl, back, err)
		}
		if diff := cmp.Diff(cl, again); diff != "" {
			t.Fatalf("%q: round trip (-first +second):\n%s", b, diff)
		}
	})
}
