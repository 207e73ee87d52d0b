package newsfeed

import (
	"path/filepath"
	"testing"
	"time"

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
