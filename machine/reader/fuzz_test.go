package reader

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
)

// fuzzArticles decodes arbitrary bytes into articles over a small id space,
// so that references hit existing, missing and own ids, duplicates and
// loops often. Each article takes: id byte, date byte, flags byte (low 3
// bits: number of references; bit 3: In-Reply-To instead), then one byte per
// reference.
func fuzzArticles(data []byte) []Summary {
	const ids = 24
	var out []Summary
	for n := int64(1); len(data) >= 3 && len(out) < 200; n++ {
		id, date, flags := data[0], data[1], data[2]
		data = data[3:]
		s := Summary{Number: n, Date: t0.Add(time.Duration(date%32) * time.Minute)}
		if id%ids != 0 {
			s.MessageID = fmt.Sprintf("<m%d@x>", id%ids)
		}
		if date >= 224 {
			s.Date = time.Time{} // undated
		}
		var refs []string
		for k := 0; k < int(flags&7) && len(data) > 0; k++ {
			refs = append(refs, fmt.Sprintf("<m%d@x>", data[0]%(ids+8)))
			data = data[1:]
		}
		if flags&8 != 0 && len(refs) > 0 {
			s.InReplyTo = refs[0]
		} else {
			s.References = refs
		}
		out = append(out, s)
	}
	return out
}

// FuzzThread threads arbitrary reference graphs: no panic, every input
// article appears exactly once in the forest, no cycles, placeholders have
// children, the result does not depend on the input order, and merging a
// split of the input equals threading all of it.
func FuzzThread(f *testing.F) {
	f.Add([]byte{1, 0, 0, 2, 1, 1, 1})                            // a reply
	f.Add([]byte{1, 0, 1, 2, 2, 1, 1, 1})                         // a -> b -> a
	f.Add([]byte{1, 0, 1, 1})                                     // self reference
	f.Add([]byte{1, 0, 0, 1, 5, 0, 3, 9, 2, 1, 2})                // duplicate ids, a missing middle
	f.Add([]byte{0, 0, 1, 5, 30, 250, 9, 1})                      // no message-id, undated, In-Reply-To
	f.Add([]byte{3, 1, 7, 1, 2, 3, 4, 5, 6, 7, 4, 2, 3, 3, 2, 1}) // long chains with loops
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzArticles(data)
		forest := Thread(in)
		checkForest(t, in, forest)
		rev := slices.Clone(in)
		slices.Reverse(rev)
		if d := cmp.Diff(render(forest, true), render(Thread(rev), true)); d != "" {
			t.Fatalf("reversed input threads differently (-forward +reversed):\n%s", d)
		}
		if len(in) > 0 {
			k := int(data[0]) % (len(in) + 1)
			merged := Merge(Thread(in[:k]), in[k:])
			if d := cmp.Diff(render(forest, true), render(merged, true)); d != "" {
				t.Fatalf("Merge at %d differs from Thread (-thread +merge):\n%s", k, d)
			}
		}
	})
}

// fuzzCaps are the capability sets FuzzClient picks from.
var fuzzCaps = []Config{
	{Capabilities: innReader},
	{Capabilities: caps("VERSION 2", "READER", "OVER", "LIST ACTIVE NEWSGROUPS OVERVIEW.FMT")},
	{Capabilities: caps("VERSION 2", "READER"), HeadWindow: 2},
	{Legacy: true, User: "u", Pass: "p"},
	{Capabilities: caps("VERSION 2", "IHAVE", "MODE-READER"), User: "u", Pass: "p", ThreadLimit: 3},
}

// fuzzRequests are the requests FuzzClient makes, in turn.
var fuzzRequests = []Request{
	GetThreads{Group: "misc.test"}, GetGroupStats{Group: "misc.test"}, GetGroups{},
	GetArticle{MessageID: "<a@example.com>"}, GetNewArticles{Group: "misc.test", Since: 2},
	GetThread{Group: "misc.test", MessageID: "<b@example.com>"},
}

// FuzzClient feeds arbitrary server bytes to a Client running requests:
// no panic; each request gets exactly one answer (a result, NotFound or
// Failed) by the time the Client is idle or closed; Closed comes once and
// last; nothing is written after the Client closed; every command written
// is a valid command line.
func FuzzClient(f *testing.F) {
	f.Add(byte(0), byte(0), []byte("211 3 1 3 misc.test\r\n215 h\r\n:\r\n.\r\n"))
	f.Add(byte(1), byte(1), []byte("211 3 1 3 misc.test\r\n224 o\r\n3\ts\tf\td\t<c@x>\t<a@x>\t1\t1\r\n.\r\n"))
	f.Add(byte(2), byte(3), []byte("480 auth\r\n381 pass\r\n281 ok\r\n215 a\r\nmisc.test 3 1 y\r\n.\r\n503 no\r\n"))
	f.Add(byte(4), byte(0), []byte("401 MODE-READER\r\n200 ok\r\n101 caps\r\nVERSION 2\r\nREADER\r\nOVER\r\n.\r\n211 1 1 1 misc.test\r\n224 o\r\n.\r\n"))
	f.Add(byte(2), byte(2), []byte("211 3 1 3 misc.test\r\n221 1 <a@x>\r\nMessage-ID: <a@x>\r\n.\r\n423 no\r\n"))
	f.Add(byte(0), byte(5), []byte("211 3 1 3 misc.test\r\n215 h\r\n:\r\n.\r\n225 a\r\n1 <a@x>\r\n.\r\n412 x\r\n"))
	f.Fuzz(func(t *testing.T, pick, split byte, data []byte) {
		cfg := fuzzCaps[int(pick)%len(fuzzCaps)]
		c := New(t0, cfg)
		now := t0
		next := int(pick) / len(fuzzCaps)
		id := uint64(0)
		answered := map[uint64]int{}
		closedSeen := false
		afterClose := false
		check := func() {
			out := c.AppendOutgoing(nil)
			if afterClose && len(out) > 0 {
				t.Fatalf("wrote %q after Closed was drained", out)
			}
			for _, l := range strings.SplitAfter(string(out), "\r\n") {
				if l == "" {
					continue
				}
				if !strings.HasSuffix(l, "\r\n") {
					t.Fatalf("command line without CRLF: %q", l)
				}
				if _, err := proto.ParseCommand([]byte(l)); err != nil {
					t.Fatalf("wrote an invalid command %q: %v", l, err)
				}
			}
			for {
				e, ok := c.NextEvent()
				if !ok {
					break
				}
				if closedSeen {
					t.Fatalf("event %#v after Closed", e)
				}
				switch e := e.(type) {
				case Closed:
					closedSeen = true
				case GroupsResult:
					answered[e.ID]++
				case StatsResult:
					answered[e.ID]++
				case ThreadsResult:
					answered[e.ID]++
				case ThreadResult:
					answered[e.ID]++
				case ArticleResult:
					answered[e.ID]++
				case NotFound:
					answered[e.ID]++
				case Failed:
					answered[e.ID]++
				}
			}
			if closedSeen != c.Closed() {
				t.Fatalf("Closed() = %v, Closed event seen %v", c.Closed(), closedSeen)
			}
			afterClose = closedSeen
			if !c.Busy() || c.Closed() {
				for k := uint64(1); k <= id; k++ {
					if answered[k] != 1 {
						t.Fatalf("request %d answered %d times", k, answered[k])
					}
				}
			}
		}
		start := func() {
			if c.Closed() || c.Busy() || id >= 3 {
				return
			}
			id++
			if err := c.Do(now, id, fuzzRequests[next%len(fuzzRequests)]); err != nil {
				t.Fatalf("Do: %v", err)
			}
			next++
			check()
		}
		start()
		n := 1 + int(split)%13
		for len(data) > 0 && !c.Closed() {
			k := min(n, len(data))
			c.Receive(now, data[:k])
			data = data[k:]
			check()
			start()
			if split&0x80 != 0 {
				now = now.Add(7 * time.Second)
				c.Timeout(now)
				check()
			}
		}
		c.ReceiveEOF(now)
		check()
		if !c.Closed() {
			t.Fatal("not closed after EOF")
		}
	})
}
