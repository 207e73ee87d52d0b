package feed

import (
	"testing"

	"github.com/newsflow/newsflow/proto"
)

// statusCases are status lines of every shape: the answers a feed lives
// on, and what ParseResponse refuses.
var statusCases = []string{
	"239 <a@b>\r\n", "238 <a@b>\r\n", "438 <a@b> already have it\r\n", "431 <a@b>\r\n",
	"235\r\n", "335 send it\n", "200 news.example.com InterNetNews server INN 2.7.1 ready (transit mode)\r\n",
	"439\t<a@b>\ttab separated\r\n", "400", "500 what?", "",
	"23\r\n", "2399 <a@b>\r\n", "699 <a@b>\r\n", "039 x\r\n", "2a9 x\r\n", "239<a@b>\r\n", "\r\n", "239 \r\n",
}

// TestStatusLine: statusLine reads every case as proto.ParseResponse does.
func TestStatusLine(t *testing.T) {
	for _, line := range statusCases {
		checkStatusLine(t, []byte(line))
	}
}

func checkStatusLine(t *testing.T, line []byte) {
	t.Helper()
	resp, err := proto.ParseResponse(line)
	code, text, ok := statusLine(line)
	if ok != (err == nil) {
		t.Fatalf("%q: statusLine ok=%v, ParseResponse err=%v", line, ok, err)
	}
	if !ok {
		return
	}
	if code != resp.Code || string(text) != resp.Text || string(firstWord(text)) != resp.StreamID() {
		t.Fatalf("%q: statusLine %d %q (id %q), ParseResponse %d %q (id %q)",
			line, code, text, firstWord(text), resp.Code, resp.Text, resp.StreamID())
	}
}

// FuzzStatusLine: on any bytes, statusLine agrees with proto.ParseResponse
// (the reference), which the feed used before and still uses for the text
// of failures.
func FuzzStatusLine(f *testing.F) {
	for _, line := range statusCases {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkStatusLine(t, line) })
}

// TestReplyAllocations: the answers of a streaming feed's steady state
// (238 to CHECK, 239 to TAKETHIS) cost no allocation in Receive beyond the
// events themselves.
func TestReplyAllocations(t *testing.T) {
	line := []byte("239 <a@b>\r\n")
	allocs := testing.AllocsPerRun(1000, func() {
		code, text, ok := statusLine(line)
		if !ok || code != 239 || string(firstWord(text)) != "<a@b>" {
			t.Fatal("bad parse")
		}
	})
	if allocs != 0 {
		t.Errorf("statusLine and firstWord allocate %v times per answer, want 0", allocs)
	}
}
