package newsfeed

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestReportAcrossRestarts: the report adds up the peers' counters of
// two runs of the relay, counts the feeder's articles and its rejection
// reason, and a window that starts after the first run leaves it out.
func TestReportAcrossRestarts(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	dir := t.TempDir()
	cfg := relayConfig(t, dir, "article_log = \"news\"\n"+peerText("sink", s, "connections = 1"))
	start := time.Now().Add(-time.Second)

	h := startRelay(t, cfg, nil)
	h.feedAll(arts("one", 5))
	bad := "<bad@t>"
	codes := dialIngest(t, h.r.Addr().String()).takethis(map[string][]byte{bad: []byte("Path: up!x\nFrom: a@b\nSubject: s\nMessage-ID: <bad@t>\n\nbody\n")})
	if codes[bad] != "439" {
		t.Fatalf("TAKETHIS of an article without Newsgroups: %q, want 439", codes[bad])
	}
	h.settle()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	between := time.Now()
	time.Sleep(2 * time.Millisecond) // the second run starts at a later millisecond

	h = startRelay(t, cfg, nil)
	h.feedAll(arts("two", 3))
	h.settle()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	rep, err := BuildReport(cfg, start, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Runs != 2 || len(rep.Peers) != 1 {
		t.Fatalf("report: %d runs, peers %+v; want 2 runs, one peer", rep.Runs, rep.Peers)
	}
	p := rep.Peers[0]
	if p.Name != "sink" || p.Offered != 8 || p.Accepted != 8 || p.Bytes == 0 || p.Queued != 0 {
		t.Errorf("peer: %+v, want sink offered 8 accepted 8", p)
	}
	if len(rep.Feeders) != 1 || rep.Feeders[0].Name != "127.0.0.1" || rep.Feeders[0].Accepted != 8 || rep.Feeders[0].Rejected != 1 {
		t.Errorf("feeders: %+v, want 127.0.0.1 with 8 accepted, 1 rejected", rep.Feeders)
	}
	if len(rep.Reasons) != 1 || rep.Reasons[0].Source != "ingest" || rep.Reasons[0].Count != 1 {
		t.Errorf("reasons: %+v", rep.Reasons)
	}

	rep, err = BuildReport(cfg, between, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Runs != 1 || len(rep.Peers) != 1 || rep.Peers[0].Accepted != 3 || len(rep.Feeders) != 1 || rep.Feeders[0].Accepted != 3 {
		t.Errorf("the second run alone: %+v", rep)
	}
	if _, err := BuildReport(relayConfig(t, filepath.Join(dir, "x"), ""), start, time.Now()); err == nil {
		t.Error("a report without article_log: no error")
	}

}

// TestReportBacklogAcrossRestart: articles a stop leaves in a peer's
// backlog are offered once in the report, not once per run: the second
// run counts them as found at start, and the report's counts add up
// (offered = accepted + queued).
func TestReportBacklogAcrossRestart(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	down := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Drop: true})
	dir := t.TempDir()
	cfg := relayConfig(t, dir, "article_log = \"news\"\n"+peerText("sink", s, "connections = 1"))
	start := time.Now().Add(-time.Second)

	h := startRelay(t, cfg, func(o *Options) { o.BackoffBase = 10 * time.Minute })
	h.feedAll(arts("held", 5))
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // the second run starts at a later millisecond
	s.RemoveFault(down)
	h = startRelay(t, cfg, nil)
	h.feedAll(arts("new", 3))
	h.settle()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	rep, err := BuildReport(cfg, start, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Runs != 2 || len(rep.Peers) != 1 {
		t.Fatalf("report: %d runs, peers %+v; want 2 runs, one peer", rep.Runs, rep.Peers)
	}
	if p := rep.Peers[0]; p.Offered != 8 || p.Accepted != 8 || p.Queued != 0 {
		t.Errorf("peer: %+v, want offered 8 accepted 8 queued 0", p)
	}
}

// TestReportLateAnswers: the latency takes in every answer, however late
// after the arrival (5 minutes, 2 hours, over a restart), pairing an
// answer's own line with its article's line; an in-line rejection's own
// line is not counted twice, and an answer whose arrival is not in the
// log is counted as unpaired. A window that starts after the arrival
// still times an answer in it.
func TestReportLateAnswers(t *testing.T) {
	dir := t.TempDir()
	cfg := relayConfig(t, dir, "article_log = \"news\"\n")
	log := `* 2026-11-20 peers=inn1,inn2
10:00:00.500 <r@t> >inn1 - code=439 reason="Bad Path"
10:00:00.000 <r@t> news1 + 100 -+
10:00:30.000 * stats peer name=inn1 run=1 offered=3 rejected=1 lat_ms=500 lat_n=1
10:00:30.000 * stats peer name=inn2 run=1 offered=3 accepted=1 lat_ms=1500 lat_n=1
10:00:00.000 <a@t> news1 + 100 qq
10:00:00.000 <d@t> news1 + 100 d.
10:02:00.000 <d@t> >inn1 d code=436
10:05:00.000 <a@t> >inn1 + code=239
10:10:00.000 <d@t> >inn1 + code=239
10:30:00.000 <old@t> >inn1 + code=239
10:30:05.000 * stats peer name=inn1 run=1 offered=3 accepted=2 rejected=1 lat_ms=500 lat_n=1
10:30:05.000 * stats peer name=inn2 run=1 offered=3 accepted=1 lat_ms=1500 lat_n=1
11:00:00.000 <gone@t> >inn2 - code=439 reason="Bad Path"
12:00:00.000 <a@t> >inn2 + code=239
12:00:05.000 * stats peer name=inn1 run=2 offered=0 lat_ms=0 lat_n=0
12:00:05.000 * stats peer name=inn2 run=2 offered=1 accepted=1 recovered=1 lat_ms=0 lat_n=0
`
	if err := os.WriteFile(filepath.Join(dir, "news"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	type lat struct {
		Name      string
		Avg       float64
		N, Unpair int64
	}
	lats := func(rep Report) []lat {
		var out []lat
		for _, p := range rep.Peers {
			out = append(out, lat{p.Name, p.AvgLatency, p.LatencySamples, p.Unpaired})
		}
		return out
	}
	rep, err := BuildReport(cfg, day, day.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []lat{
		{"inn1", (0.5 + 300 + 600) / 3, 3, 1},
		{"inn2", (1.5 + 7200) / 2, 2, 1},
	}
	if diff := cmp.Diff(want, lats(rep)); diff != "" || rep.Unpaired != 2 {
		t.Errorf("latency (-want +got):\n%s\nunpaired %d, want 2", diff, rep.Unpaired)
	}

	rep, err = BuildReport(cfg, day.Add(11*time.Hour+time.Minute), day.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want = []lat{{"inn1", 0, 0, 0}, {"inn2", 7200, 1, 0}}
	if diff := cmp.Diff(want, lats(rep)); diff != "" || rep.Unpaired != 0 {
		t.Errorf("from 11:01 (-want +got):\n%s\nunpaired %d, want 0", diff, rep.Unpaired)
	}
}

// TestLatePairsMemory: what the pairing holds is the arrivals still
// awaiting an answer, not the lines read: answered arrivals and expired
// orphans leave nothing behind.
func TestLatePairsMemory(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	lp := newLatePairs(t0, t0.Add(48*time.Hour))
	const n = 20000
	for i := range n {
		id := fmt.Sprintf("<%d@t>", i)
		at := t0.Add(time.Duration(i) * time.Second)
		lp.line(ArticleLogLine{Time: at, Untimed: true, MessageID: id, Who: "peer=inn1", Verdict: "queued"})
		if i%2 == 0 {
			lp.line(ArticleLogLine{Time: at.Add(time.Hour), MessageID: id, Who: "peer=inn1", Verdict: "accepted"})
		}
		lp.line(ArticleLogLine{Time: at.Add(time.Hour), MessageID: "<x" + id[1:], Who: "peer=inn1", Verdict: "accepted"})
	}
	lp.expire(true)
	if len(lp.awaiting) != n/2 || len(lp.order) > 2*n/2+1024 || len(lp.orphans) != 0 || len(lp.orphanOrder) != 0 {
		t.Errorf("held: %d awaiting (want %d), order %d, %d orphans, orphan order %d", len(lp.awaiting), n/2, len(lp.order), len(lp.orphans), len(lp.orphanOrder))
	}
	if lp.n["inn1"] != n/2 || lp.unpaired["inn1"] != n {
		t.Errorf("paired %d (want %d), unpaired %d (want %d)", lp.n["inn1"], n/2, lp.unpaired["inn1"], n)
	}
}
