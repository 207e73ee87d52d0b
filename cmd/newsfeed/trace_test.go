package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsfeed"
)

// TestPrintTraceOrder: arrivals and answers print in time order, whoever
// they are from, and an answer the log gives without its time says so.
func TestPrintTraceOrder(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse("15:04:05.000", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.AddDate(2026, 10, 27)
	}
	tr := newsfeed.TraceResult{
		MessageID: "<a@b>", History: "stored", Log: "news",
		Events: []newsfeed.TraceEvent{
			{Time: at("22:15:10.900"), Who: "ingest", Verdict: "accepted", Fields: map[string]string{"from": "news1", "size": "100", "peers": "a,b"}},
			{Time: at("22:15:11.095"), Who: "ingest", Verdict: "refused", Fields: map[string]string{"from": "news2", "reason": "already in history"}},
		},
		Peers: []newsfeed.PeerTrace{
			{Name: "a", Queued: true, Answers: []newsfeed.TraceEvent{{Time: at("22:15:10.900"), Untimed: true, Who: "a", Verdict: "accepted"}}},
			{Name: "b", Queued: true, Answers: []newsfeed.TraceEvent{{Time: at("22:15:12.000"), Who: "b", Verdict: "deferred", Fields: map[string]string{"code": "431"}}}},
		},
	}
	var out bytes.Buffer
	printTrace(&out, tr)
	want := `<a@b>: history stored
2026-11-28 22:15:10.900 ingest accepted from news1, 100 octets, queued for "a,b"
time not recorded       peer a: accepted
2026-11-28 22:15:11.095 ingest refused from news2: already in history
2026-11-28 22:15:12.000 peer b: deferred 431
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("printTrace (-want +got):\n%s", diff)
	}
}

// TestPrintTraceUnknown: an article nothing knows is said so in one
// line, not as "not sent" to every peer.
func TestPrintTraceUnknown(t *testing.T) {
	tr := newsfeed.TraceResult{MessageID: "<x@y>", History: "unknown", Log: "/spool/news",
		Peers: []newsfeed.PeerTrace{{Name: "a"}, {Name: "b"}}}
	var out bytes.Buffer
	printTrace(&out, tr)
	want := "<x@y>: history unknown\nnot in the article log nor in a peer's queue: never offered to this relay, or before the log's oldest file (/spool/news)\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("printTrace (-want +got):\n%s", diff)
	}
}
