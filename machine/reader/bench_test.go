package reader

import (
	"fmt"
	"testing"

	"github.com/newsflow/newsflow/proto"
)

// BenchmarkClientOver runs GetThreads over 1000 articles with OVER through
// the Client, the server's answer given in 16 KiB reads: the cost of
// parsing thread data per connection.
func BenchmarkClientOver(b *testing.B) {
	arts := realisticArticles(1000)
	var block []byte
	for _, a := range arts {
		o := proto.Overview{Number: a.Number, Subject: a.Subject, From: a.From, Date: proto.FormatArticleDate(a.Date),
			MessageID: a.MessageID, Bytes: 2000, Lines: 40}
		for i, r := range a.References {
			if i > 0 {
				o.References += " "
			}
			o.References += r
		}
		block = proto.AppendOverviewLine(block, o, nil)
	}
	answer := append([]byte("224 Overview follows\r\n"), proto.AppendBlock(nil, block)...)
	cfg := Config{Capabilities: caps("VERSION 2", "READER", "OVER")}
	b.SetBytes(int64(len(answer)))
	b.ReportAllocs()
	for b.Loop() {
		c := New(t0, cfg)
		c.Do(t0, 1, GetThreads{Group: "g"})
		c.AppendOutgoing(nil)
		c.Receive(t0, []byte("211 1000 1 1000 g\r\n"))
		c.AppendOutgoing(nil)
		for p := answer; len(p) > 0; {
			n := min(len(p), 16<<10)
			if err := c.Receive(t0, p[:n]); err != nil {
				b.Fatal(err)
			}
			p = p[n:]
		}
		e, _ := c.NextEvent()
		if r, ok := e.(ThreadsResult); !ok || len(r.Articles) != 1000 {
			b.Fatal(fmt.Sprint(describe([]Event{e})[0]))
		}
	}
}
