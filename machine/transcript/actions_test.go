package transcript

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAction(t *testing.T) {
	tests := []struct {
		e      Entry
		want   string
		wantOK bool
	}{
		{Entry{Kind: Comment, Text: "do: close"}, "close", true},
		{Entry{Kind: Comment, Text: "do:offer <a@b>  "}, "offer <a@b>", true},
		{Entry{Kind: Comment, Text: "do:"}, "", true},
		{Entry{Kind: Comment, Text: "want: Closed"}, "", false},
		{Entry{Kind: Comment, Text: " do: close"}, "", false},
		{Entry{Kind: Data, Side: Client, Data: []byte("do: close\r\n")}, "", false},
	}
	for _, tt := range tests {
		got, ok := Action(tt.e)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Action(%+v) = %q, %v; want %q, %v", tt.e, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestSplitActions(t *testing.T) {
	text := "C: MODE STREAM\nS: 203 ok\n@ +2s\n# do: offer <a@b>\nC: CHECK <a@b>\n@ +1s\n# a note\n# do: close\n@ +3s\nC: QUIT\n"
	tr, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	t0 := Epoch
	type part struct {
		Lines      []int
		Start, End time.Duration
		Then       string
		ThenLine   int
	}
	var got []part
	for _, p := range SplitActions(tr, t0) {
		var lines []int
		for _, e := range p.Transcript {
			lines = append(lines, e.Line)
		}
		got = append(got, part{lines, p.Start.Sub(t0), p.End.Sub(t0), p.Then, p.ThenLine})
	}
	want := []part{
		{[]int{1, 2, 3}, 0, 2 * time.Second, "offer <a@b>", 4},
		{[]int{5, 6, 7}, 2 * time.Second, 3 * time.Second, "close", 8},
		{[]int{9, 10}, 3 * time.Second, 6 * time.Second, "", 0},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parts (-want +got):\n%s", d)
	}
	if i := FirstAction(tr); i != 3 {
		t.Errorf("FirstAction = %d, want 3", i)
	}

	none := Transcript{Send(Client, "QUIT")}
	ps := SplitActions(none, t0)
	if len(ps) != 1 || len(ps[0].Transcript) != 1 || ps[0].Then != "" {
		t.Errorf("no action: %+v, want one part with the whole transcript", ps)
	}
	if i := FirstAction(none); i != 1 {
		t.Errorf("FirstAction with no action = %d, want 1", i)
	}
	if ps := SplitActions(nil, t0); len(ps) != 1 || !ps[0].Start.Equal(t0) || !ps[0].End.Equal(t0) {
		t.Errorf("empty transcript: %+v, want one empty part at start", ps)
	}
}
