package reader

import (
	"testing"

	"github.com/newsflow/newsflow/proto"
)

// TestConnAnswers takes every row of the connection-level answer table,
// alone and against the others in one batch: the answer acted on is the
// first of the highest rank, and a 412 counts only for a command that works
// on the selected group.
func TestConnAnswers(t *testing.T) {
	over := proto.Command{Verb: "OVER", Args: []string{"1-10"}}
	byID := proto.Command{Verb: "ARTICLE", Args: []string{"<a@b>"}}
	ans := func(cmd proto.Command, code int) answer {
		return answer{cmd: cmd, resp: proto.Response{Code: code, Text: "x"}}
	}
	cases := []struct {
		name    string
		batch   []answer
		want    int // index of the answer acted on; -1 for none
		wantAct connAct
	}{
		{"400 alone", []answer{ans(over, 400)}, 0, connClosing},
		{"483 alone", []answer{ans(over, 483)}, 0, connEncrypt},
		{"480 alone", []answer{ans(over, 480)}, 0, connAuth},
		{"401 alone", []answer{ans(over, 401)}, 0, connWrongMode},
		{"412 to OVER by range", []answer{ans(over, 412)}, 0, connNoGroup},
		{"412 to ARTICLE by message-id is the step's", []answer{ans(byID, 412)}, -1, connStep},
		{"500 is the step's", []answer{ans(over, 500)}, -1, connStep},
		{"501 is the step's", []answer{ans(over, 501)}, -1, connStep},
		{"503 is the step's", []answer{ans(over, 503)}, -1, connStep},
		{"224 is the step's", []answer{ans(over, 224)}, -1, connStep},
		{"480 over 412 and 401", []answer{ans(over, 412), ans(over, 401), ans(over, 480)}, 2, connAuth},
		{"400 over 480", []answer{ans(over, 480), ans(over, 400)}, 1, connClosing},
		{"the first of 483 and 400", []answer{ans(over, 483), ans(over, 400)}, 0, connEncrypt},
		{"401 over 412", []answer{ans(over, 412), ans(over, 401)}, 1, connWrongMode},
		{"the first of two 480s", []answer{ans(over, 480), ans(byID, 480)}, 0, connAuth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, act := connAnswer(tc.batch)
			if act != tc.wantAct {
				t.Fatalf("act %d, want %d", act, tc.wantAct)
			}
			if tc.want >= 0 && (got.resp.Code != tc.batch[tc.want].resp.Code || got.cmd.String() != tc.batch[tc.want].cmd.String()) {
				t.Errorf("acted on %s -> %d, want answer %d", got.cmd, got.resp.Code, tc.want)
			}
		})
	}
	for code, row := range connAnswers {
		if refusedCode(code) != (row.act == connUnsupported) {
			t.Errorf("refusedCode(%d) = %t for a row %v", code, refusedCode(code), row)
		}
	}
	for _, code := range []int{200, 411, 423, 430, 502} {
		if refusedCode(code) {
			t.Errorf("refusedCode(%d) = true", code)
		}
	}
}
