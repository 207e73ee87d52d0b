package download

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
)

// bodyResp is a 222 response with a wire-form body.
func bodyResp(id string, wire []byte) []byte {
	return append([]byte("222 0 "+id+"\r\n"), wire...)
}

// yencPart encodes data as part n of a multipart file, in wire form.
func yencPart(data []byte, n int, begin, size int64, keepDot bool) []byte {
	return proto.YencEncode(nil, data, proto.YencOptions{Name: "f.bin", Part: n, Total: 9, Begin: begin, Size: size,
		Wire: true, KeepLeadingDot: keepDot})
}

// fetchCase is a pipelined exchange: the requests, the server's bytes for
// all of them, and what must come out.
type fetchCase struct {
	reqs  []Request
	input []byte
	want  []string
	data  map[Key][]byte // decoded bytes of each segment that has some
}

// mixedPipeline builds a realistic pipeline of answers: good yEnc parts
// (random bytes with escapes; one of only dots, so every line is
// dot-stuffed), 430 in the middle, garbage that must be reported while the
// stream stays in step (CRC mismatch, data beyond the declared size, a
// broken header, plain text), a UU body, and a last good part.
func mixedPipeline() fetchCase {
	rng := rand.New(rand.NewPCG(7, 7))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	const size = 9 * 1000
	c := fetchCase{data: map[Key][]byte{}}
	add := func(n int, resp []byte, want ...string) {
		k := Key{File: 1, Number: n}
		c.reqs = append(c.reqs, Request{Segment: k, MessageID: fmt.Sprintf("<p%d@t>", n)})
		c.input = append(c.input, resp...)
		c.want = append(c.want, want...)
	}
	crcOf := func(b []byte) string { return fmt.Sprintf("%08x", crc32.ChecksumIEEE(b)) }

	p1 := random(1000)
	add(1, bodyResp("<p1@t>", yencPart(p1, 1, 1, size, false)),
		"data 1/1 0+1000", "ok 1/1 off=0 size=1000 crc="+crcOf(p1)+` name="f.bin"`)
	c.data[Key{1, 1}] = p1

	add(2, []byte("430 no such article\r\n"), "notfound 1/2 430")

	dots := bytes.Repeat([]byte{4}, 1000) // "." when encoded: every line starts with a stuffed dot
	add(3, bodyResp("<p3@t>", yencPart(dots, 3, 2001, size, true)),
		"data 1/3 2000+1000", "ok 1/3 off=2000 size=1000 crc="+crcOf(dots)+` name="f.bin"`)
	c.data[Key{1, 3}] = dots

	p4 := random(1000)
	bad := yencPart(p4, 4, 3001, size, false)
	bad = bytes.Replace(bad, []byte(fmt.Sprintf("pcrc32=%s", crcOf(p4))), []byte("pcrc32=00000000"), 1)
	add(4, bodyResp("<p4@t>", bad),
		"data 1/4 3000+1000", "bad 1/4: yenc: part 4 crc32 mismatch: want 00000000, got "+crcOf(p4))

	p5 := random(1000)
	over := yencPart(p5, 5, 4001, size, false)
	over = bytes.Replace(over, []byte("end=5000"), []byte("end=4500"), 1)
	add(5, bodyResp("<p5@t>", over),
		"data 1/5 4000+500", "bad 1/5: yenc: part 5: more data than the declared 500 bytes")

	add(6, bodyResp("<p6@t>", []byte("=ybegin part=6 line=128 name=x\r\nabc\r\n=yend\r\n.\r\n")),
		`bad 1/6: yenc: =ybegin without size=`)

	add(7, bodyResp("<p7@t>", []byte("just some text\r\n..with a dot\r\n.\r\n")),
		"bad 1/7: yenc: no =ybegin line in body")

	uu := []byte("a uuencoded file, old style")
	add(8, bodyResp("<p8@t>", proto.UUEncode(nil, uu, proto.UUOptions{Name: "old.txt", Wire: true})),
		"data 1/8 0+27", "ok 1/8 off=0 size=27 crc="+crcOf(uu)+` uu name="old.txt"`)
	c.data[Key{1, 8}] = uu

	p9 := random(1000)
	add(9, bodyResp("<p9@t>", yencPart(p9, 9, 8001, size, false)),
		"data 1/9 8000+1000", "ok 1/9 off=8000 size=1000 crc="+crcOf(p9)+` name="f.bin"`)
	c.data[Key{1, 9}] = p9
	return c
}

// runFetch feeds the pieces to a Fetch that has all the case's requests in
// flight and returns the summary and the decoded bytes per segment.
func runFetch(t testing.TB, c fetchCase, pieces [][]byte) ([]string, map[Key][]byte) {
	t.Helper()
	l := newLogged(NewFetch(epoch, FetchConfig{Pipeline: len(c.reqs)}))
	for _, r := range c.reqs {
		if err := l.Request(epoch, r); err != nil {
			t.Fatal(err)
		}
	}
	var want []byte
	for _, r := range c.reqs {
		want = append(want, "BODY "+r.MessageID+"\r\n"...)
	}
	if got := l.AppendOutgoing(nil); !bytes.Equal(got, want) {
		t.Fatalf("commands: %q, want %q", got, want)
	}
	for _, p := range pieces {
		if err := l.Receive(epoch, p); err != nil {
			t.Fatalf("Receive: %v", err)
		}
	}
	if l.Pending() != 0 || l.Closed() {
		t.Fatalf("after all answers: %d pending, closed %v", l.Pending(), l.Closed())
	}
	return summarize(l.evs), l.bytes
}

// TestFetchSplits feeds a pipeline of good, missing and bad answers whole,
// byte by byte and cut in two at every byte boundary: the events and the
// decoded bytes must be the same every time, the garbage reported, and the
// stream in step to the end.
func TestFetchSplits(t *testing.T) {
	c := mixedPipeline()
	check := func(name string, pieces [][]byte) {
		t.Helper()
		got, data := runFetch(t, c, pieces)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Fatalf("%s: events (-want +got):\n%s", name, diff)
		}
		for k, want := range c.data {
			if !bytes.Equal(data[k], want) {
				t.Fatalf("%s: segment %s: decoded bytes differ", name, k)
			}
		}
	}
	check("whole", [][]byte{c.input})
	var bytewise [][]byte
	for i := range c.input {
		bytewise = append(bytewise, c.input[i:i+1])
	}
	check("byte by byte", bytewise)
	for k := 1; k < len(c.input); k++ {
		check(fmt.Sprintf("cut at %d", k), [][]byte{c.input[:k], c.input[k:]})
	}
}

// TestFetchErrors checks the garbage that closes a Fetch with a protocol
// error, and misuse by the owner.
func TestFetchErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reqs    int
		input   string
		wantErr string
		want    []string
	}{
		{"a response with no command outstanding", 0, "200 hello\r\n", "no command outstanding", []string{"closed protocol error"}},
		{"not a status line", 1, "hello there\r\n", "malformed response", []string{"closed protocol error pending=1/1"}},
		{"an overlong status line", 1, "430 " + strings.Repeat("x", 3000), "line too long", []string{"closed protocol error pending=1/1"}},
		{"2xx that is not a body", 1, "223 0 <p1@t>\r\n", "unexpected response", []string{"closed protocol error pending=1/1"}},
		{"1xx to BODY", 1, "100 help\r\n", "unexpected response", []string{"closed protocol error pending=1/1"}},
		{"a body for another article", 2, "222 0 <p2@t>\r\n", "out of step", []string{"closed protocol error pending=1/1,1/2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLogged(NewFetch(epoch, FetchConfig{Pipeline: 2}))
			for i := range tc.reqs {
				if err := l.Request(epoch, Request{Segment: Key{1, i + 1}, MessageID: fmt.Sprintf("p%d@t", i+1)}); err != nil {
					t.Fatal(err)
				}
			}
			err := l.Receive(epoch, []byte(tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Receive: %v, want an error containing %q", err, tc.wantErr)
			}
			if !l.Closed() {
				t.Fatal("not closed after a protocol error")
			}
			if diff := cmp.Diff(tc.want, summarize(l.evs)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if err := l.Receive(epoch, []byte("x")); err == nil {
				t.Error("Receive after close accepted")
			}
		})
	}

	f := NewFetch(epoch, FetchConfig{Pipeline: 1})
	if err := f.Request(epoch, Request{Segment: Key{1, 1}, MessageID: "bad id@t"}); err == nil {
		t.Error("a message-id with a space accepted")
	}
	if err := f.Request(epoch, Request{Segment: Key{1, 1}, MessageID: "a@t", Group: "bad group"}); err == nil {
		t.Error("a group with a space accepted")
	}
	if f.Free() != 1 {
		t.Fatalf("Free = %d, want 1", f.Free())
	}
	if err := f.Request(epoch, Request{Segment: Key{1, 1}, MessageID: "a@t"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Request(epoch, Request{Segment: Key{1, 2}, MessageID: "b@t"}); err == nil {
		t.Error("a request beyond the pipeline accepted")
	}
	f.Close(epoch)
	if f.Free() != 0 {
		t.Error("Free after Close")
	}
}

// TestFetchDeadline checks the stall timer: none while idle, Timeout after
// the last progress while a response is due, and a spurious Timeout is a
// no-op.
func TestFetchDeadline(t *testing.T) {
	f := NewFetch(epoch, FetchConfig{Timeout: 10 * time.Second})
	if _, ok := f.Deadline(); ok {
		t.Fatal("deadline while idle")
	}
	at := epoch.Add(5 * time.Second)
	if err := f.Request(at, Request{Segment: Key{1, 1}, MessageID: "a@t"}); err != nil {
		t.Fatal(err)
	}
	if d, ok := f.Deadline(); !ok || !d.Equal(at.Add(10*time.Second)) {
		t.Fatalf("deadline %v %v, want %v", d, ok, at.Add(10*time.Second))
	}
	at2 := epoch.Add(12 * time.Second)
	if err := f.Receive(at2, []byte("222 0 <a@t>\r\n=ybegin")); err != nil {
		t.Fatal(err)
	}
	f.Timeout(epoch.Add(21 * time.Second)) // early: nothing
	if f.Closed() {
		t.Fatal("closed before the deadline")
	}
	f.Timeout(at2.Add(10 * time.Second))
	if !f.Closed() {
		t.Fatal("not closed at the deadline")
	}
	var got []string
	for e, ok := f.NextEvent(); ok; e, ok = f.NextEvent() {
		got = append(got, e.(fmt.Stringer).String())
	}
	if diff := cmp.Diff([]string{"closed timeout pending=1/1"}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestFetchDataLifetime checks that Data bytes not drained before the next
// input are not overwritten by it.
func TestFetchDataLifetime(t *testing.T) {
	c := mixedPipeline()
	f := NewFetch(epoch, FetchConfig{Pipeline: len(c.reqs)})
	for _, r := range c.reqs {
		if err := f.Request(epoch, r); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < len(c.input); i += 700 {
		if err := f.Receive(epoch, c.input[i:min(i+700, len(c.input))]); err != nil {
			t.Fatal(err)
		}
	}
	got := map[Key][]byte{}
	for e, ok := f.NextEvent(); ok; e, ok = f.NextEvent() {
		if d, ok := e.(Data); ok {
			got[d.Segment] = append(got[d.Segment], d.Bytes...)
		}
	}
	for k, want := range c.data {
		if !bytes.Equal(got[k], want) {
			t.Errorf("segment %s: bytes overwritten before they were drained", k)
		}
	}
}

// TestResultOutcomes checks the mapping from Fetch results to the retry
// table's outcomes.
func TestResultOutcomes(t *testing.T) {
	k := Key{1, 1}
	for _, tc := range []struct {
		r    interface{ Outcome() Outcome }
		want Outcome
	}{
		{SegmentOK{Segment: k}, OK},
		{SegmentBad{Segment: k, Err: errors.New("x")}, Corrupt},
		{NotFound{Segment: k, Response: proto.Response{Code: 430}}, Missing},
		{RequestFailed{Segment: k, Response: proto.Response{Code: 502}}, AuthError},
		{RequestFailed{Segment: k, Response: proto.Response{Code: 481}}, AuthError},
		{RequestFailed{Segment: k, Response: proto.Response{Code: 500}}, ConnError},
		{RequestFailed{Segment: k, Response: proto.Response{Code: 412}}, ConnError},
		{ConnClosed{Reason: ReasonAuth}, AuthError},
		{ConnClosed{Reason: ReasonTimeout}, ConnError},
		{ConnClosed{Reason: ReasonUnavailable}, ConnError},
		{ConnClosed{Reason: ReasonEOF}, ConnError},
		{ConnClosed{Reason: ReasonProtocol}, ConnError},
	} {
		if got := tc.r.Outcome(); got != tc.want {
			t.Errorf("%v: Outcome %v, want %v", tc.r, got, tc.want)
		}
	}
}

// TestFetchEndlessBody: a server that never ends a
// body is cut once the body is well past its declared size (the NZB's
// bytes=, else the yEnc header's part size, else MaxBody) instead of being
// read for ever, and the connection is closed.
func TestFetchEndlessBody(t *testing.T) {
	header := "222 0 <a@t>\r\n=ybegin part=1 total=9 line=128 size=9000 name=f.bin\r\n=ypart begin=1 end=1000\r\n"
	line := []byte(strings.Repeat("x", 126) + "\r\n")
	for _, tc := range []struct {
		name  string
		bytes int64  // NZB bytes=
		head  string // what precedes the endless lines
		limit int64  // the wire bytes after which the Fetch must have closed
	}{
		{"NZB bytes", 1000, header, 2*1000 + 1<<20},
		{"yEnc part size", 0, header, 2*1000 + 1<<20},
		{"nothing declared", 0, "222 0 <a@t>\r\n", MaxBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFetch(epoch, FetchConfig{Pipeline: 1})
			if err := f.Request(epoch, Request{Segment: Key{1, 1}, MessageID: "a@t", Bytes: tc.bytes}); err != nil {
				t.Fatal(err)
			}
			f.AppendOutgoing(nil)
			chunk := bytes.Repeat(line, 512)
			sent := int64(len(tc.head))
			if err := f.Receive(epoch, []byte(tc.head)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for !f.Closed() && sent <= tc.limit+int64(len(chunk)) {
				f.Receive(epoch, chunk)
				sent += int64(len(chunk))
				for e, ok := f.NextEvent(); ok; e, ok = f.NextEvent() {
					if _, data := e.(Data); !data {
						got = append(got, e.(fmt.Stringer).String())
					}
				}
			}
			if !f.Closed() {
				t.Fatalf("still reading after %d bytes of a body that never ends", sent)
			}
			if diff := cmp.Diff([]string{"closed protocol error pending=1/1"}, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
