package feed

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fuzzIDs are the articles every fuzz run offers.
var fuzzIDs = []string{"<a@x>", "<b@x>", "<c@x>", "<d@x>", "<e@x>"}

// FuzzFeed gives arbitrary server bytes to a Feed that offered five
// articles and checks the properties that must hold for any peer: no
// panic; the same output and events whether the bytes come in one piece or
// one byte at a time; and after an Abort, every offered article has exactly
// one outcome and Closed is the last event. flags selects the Feed: bit 0
// streaming, bit 1 credentials, bits 2-3 the window, bit 4 an eager
// no-CHECK filter.
func FuzzFeed(f *testing.F) {
	f.Add(byte(1), []byte("238 <a@x>\r\n438 <b@x>\r\n431 <c@x>\r\n238 <d@x>\r\n438 <e@x>\r\n239 <a@x>\r\n439 <d@x> dup\r\n"))
	f.Add(byte(0), []byte("335 send\r\n235 ok\r\n435 dup\r\n436 later\r\n335 send\r\n437 no\r\n"))
	f.Add(byte(3), []byte("480 auth\r\n238 <b@x>\r\n381 pass\r\n281 ok\r\n239 <b@x>\r\n"))
	f.Add(byte(1), []byte("500 what\r\n500 what\r\n500 what\r\n500 what\r\n500 what\r\n335 go\r\n235 ok\r\n"))
	f.Add(byte(1), []byte("238 <a@x>\r\n400 shutting down\r\n"))
	f.Add(byte(1), []byte("238 <b@x>\r\n"))
	f.Add(byte(17), []byte("238 <a@x>\r\n238 <b@x>\r\n239 <a@x>\r\n431 <b@x>\r\n"))
	f.Add(byte(1), []byte("\x00\xff garbage\n"))
	f.Fuzz(func(t *testing.T, flags byte, data []byte) {
		cfg := Config{
			Streaming: flags&1 != 0,
			Window:    1 + int(flags>>2&3),
			Bodies:    bodyMap{},
		}
		if flags&2 != 0 {
			cfg.User, cfg.Pass = "u", "p"
		}
		if flags&16 != 0 {
			cfg.NoCheckHigh, cfg.NoCheckLow, cfg.NoCheckFilter = 50, 40, 1
		}
		run := func(pieces [][]byte) ([]byte, []Event) {
			f := New(t0, cfg)
			for _, id := range fuzzIDs {
				f.Offer(t0, art(id))
			}
			out := f.AppendOutgoing(nil)
			for _, p := range pieces {
				if f.Closed() {
					break
				}
				f.Receive(t0, p)
				out = f.AppendOutgoing(out)
			}
			f.Abort(t0, "fuzz")
			var evs []Event
			for {
				e, ok := f.NextEvent()
				if !ok {
					return out, evs
				}
				evs = append(evs, e)
			}
		}
		out, evs := run([][]byte{data})
		var bytewise [][]byte
		for i := range data {
			bytewise = append(bytewise, data[i:i+1])
		}
		out2, evs2 := run(bytewise)
		if !bytes.Equal(out, out2) {
			t.Fatalf("output differs, whole vs byte by byte:\n%s", cmp.Diff(string(out), string(out2)))
		}
		if d := cmp.Diff(evs, evs2); d != "" {
			t.Fatalf("events differ, whole vs byte by byte (-whole +bytes):\n%s", d)
		}
		got := outcomes(evs)
		for _, id := range fuzzIDs {
			if got[id] != 1 {
				t.Fatalf("%s: %d outcomes: %s", id, got[id], summarize(evs))
			}
		}
		if _, ok := evs[len(evs)-1].(Closed); !ok {
			t.Fatalf("last event %#v", evs[len(evs)-1])
		}
	})
}
