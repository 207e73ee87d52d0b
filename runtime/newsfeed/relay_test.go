package newsfeed

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/spoolfs"
)

// TestFanOut feeds articles over TCP and checks that each of four peers
// gets exactly the articles its patterns, pathname and size limit allow.
func TestFanOut(t *testing.T) { forRuntimes(t, testFanOut) }

func testFanOut(t *testing.T, rt string) {
	sinks := map[string]*nntptest.Server{}
	for _, n := range []string{"all", "comp", "nobin", "small"} {
		sinks[n] = nntptest.Start(t, nntptest.Options{Hostname: n})
	}
	text := peerText("all", sinks["all"], `groups = ["*"]`) +
		peerText("comp", sinks["comp"], `groups = ["comp.*", "!comp.secret.*"]`) +
		peerText("nobin", sinks["nobin"], `groups = ["*", "@alt.binaries.*"]`) +
		peerText("small", sinks["small"], "pathname = \"loop.example\"\nmax_size = 3000\nconnections = 1")
	h := startRelay(t, relayConfigRT(t, rt, t.TempDir(), text), nil)

	arts := map[string][]byte{
		"<misc@t>":   testArticle("<misc@t>", "misc.test", "up.example!not-for-mail", 5),
		"<go@t>":     testArticle("<go@t>", "comp.lang.go", "up.example!not-for-mail", 5),
		"<secret@t>": testArticle("<secret@t>", "comp.secret.plans", "up.example!not-for-mail", 5),
		"<bin@t>":    testArticle("<bin@t>", "alt.binaries.x,misc.test", "up.example!not-for-mail", 5),
		"<loop@t>":   testArticle("<loop@t>", "comp.lang.go", "up.example!loop.example!not-for-mail", 5),
		"<big@t>":    testArticle("<big@t>", "comp.lang.c", "up.example!not-for-mail", 100),
		// Larger than driver.SmallBody: read, checked and written in a
		// write of its own by both runtimes.
		"<huge@t>": testArticle("<huge@t>", "misc.test", "up.example!not-for-mail", 400),
	}
	codes := dialIngest(t, h.r.Addr().String()).takethis(arts)
	wantCodes := map[string]string{}
	for id := range arts {
		wantCodes[id] = "239"
	}
	if diff := cmp.Diff(wantCodes, codes); diff != "" {
		t.Fatalf("TAKETHIS answers (-want +got):\n%s", diff)
	}
	h.settle()
	// The peers' connections (and the ingest one) are the loop's with
	// epoll, and there is no loop with goroutines.
	if got := h.r.loop.conns(); (rt == "epoll") != (got > len(sinks)) {
		t.Errorf("runtime %s: %d connections were attached to the epoll loop", rt, got)
	}

	want := map[string][]string{
		"all":   {"<big@t>", "<bin@t>", "<go@t>", "<huge@t>", "<loop@t>", "<misc@t>", "<secret@t>"},
		"comp":  {"<big@t>", "<go@t>", "<loop@t>"},
		"nobin": {"<big@t>", "<go@t>", "<huge@t>", "<loop@t>", "<misc@t>", "<secret@t>"},
		"small": {"<bin@t>", "<go@t>", "<misc@t>", "<secret@t>"},
	}
	got := map[string][]string{}
	for n, s := range sinks {
		got[n] = slices.Sorted(slices.Values(s.AcceptedIDs()))
		for _, tr := range s.Transfers() {
			if !bytes.HasPrefix(tr.Article, []byte("Path: relay.test!up.example!")) {
				t.Errorf("%s got %s with header %q, want our Path identity first", n, tr.MessageID, firstLine(tr.Article))
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("articles per peer (-want +got):\n%s", diff)
	}
	st := h.r.Status()
	skips := map[string][3]int64{}
	for _, p := range st.Peers {
		skips[p.Name] = [3]int64{p.SkippedGroups, p.SkippedPath, p.SkippedSize}
	}
	wantSkips := map[string][3]int64{"all": {0, 0, 0}, "comp": {4, 0, 0}, "nobin": {1, 0, 0}, "small": {0, 1, 2}}
	if diff := cmp.Diff(wantSkips, skips); diff != "" {
		t.Errorf("skips [groups path size] (-want +got):\n%s", diff)
	}
	h.checkStats()
}

func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// TestIngestAnswers checks the listener's answers to CHECK, TAKETHIS and
// IHAVE for new, duplicate, looping and malformed articles.
func TestIngestAnswers(t *testing.T) { forRuntimes(t, testIngestAnswers) }

func testIngestAnswers(t *testing.T, rt string) {
	h := startRelay(t, relayConfigRT(t, rt, t.TempDir(), ""), nil)
	c := dialIngest(t, h.r.Addr().String())
	art := proto.ToWire(testArticle("<one@t>", "misc.test", "up!x", 2))
	loop := proto.ToWire(testArticle("<loop@t>", "misc.test", "up!relay.test!x", 2))
	got := []string{
		c.cmd("MODE STREAM"),
		c.cmd("CHECK <one@t>"),
		c.cmd("TAKETHIS <one@t>\r\n" + strings.TrimSuffix(string(art), "\r\n")),
		c.cmd("CHECK <one@t>"),
		c.cmd("TAKETHIS <one@t>\r\n" + strings.TrimSuffix(string(art), "\r\n")),
		c.cmd("TAKETHIS <loop@t>\r\n" + strings.TrimSuffix(string(loop), "\r\n")),
		c.cmd("CHECK <loop@t>"), // remembered as rejected
		c.cmd("CHECK <no-at-sign>"),
		c.cmd("IHAVE <one@t>"),
		c.cmd("IHAVE <two@t>"),
		c.cmd(strings.TrimSuffix(string(proto.ToWire(testArticle("<two@t>", "misc.test", "up!x", 1))), "\r\n")),
		c.cmd("QUIT"),
	}
	codes := make([]string, len(got))
	for i, l := range got {
		codes[i], _, _ = strings.Cut(l, " ")
	}
	want := []string{"203", "238", "239", "438", "439", "439", "438", "438", "435", "335", "235", "205"}
	if diff := cmp.Diff(want, codes); diff != "" {
		t.Errorf("answers (-want +got):\n%s\nlines: %q", diff, got)
	}
	for _, id := range []string{"<one@t>", "<two@t>"} {
		if e, ok := h.r.Spool().History().Lookup(id); !ok || e.Token.IsZero() {
			t.Errorf("%s not in the history after 239/235", id)
		}
	}
	a, _ := h.r.Spool().History().Lookup("<one@t>")
	wire, err := h.r.Spool().Get(a.Token)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(wire, []byte("Path: relay.test!up!x\r\n")) {
		t.Errorf("stored article starts %q, want our Path identity prepended", firstLine(wire))
	}
}

// TestFaults runs one peer through the faults a feeder meets and checks
// that every article is accounted for and the stats add up.
func TestFaults(t *testing.T) { forRuntimes(t, testFaults) }

func testFaults(t *testing.T, rt string) {
	const n = 40
	tests := []struct {
		name  string
		extra string
		setup func(s *nntptest.Server)
		// want: accepted, refused, rejected, dropped; and whether the sink
		// must hold every article.
		want     [4]int64
		allThere bool
		// resent: a cut connection may lose the answer to an article the
		// sink took; sent again, it is refused as a duplicate. Accepted and
		// refused are then compared as one sum.
		resent   bool
		minConns int // the sink must have seen at least this many connections
	}{
		{"closes mid-TAKETHIS", "", func(s *nntptest.Server) {
			s.AddFault(nntptest.Fault{Cmd: "TAKETHIS", Nth: 5, CloseAfter: 1})
			s.AddFault(nntptest.Fault{Cmd: "TAKETHIS", Nth: 17, Drop: true})
		}, [4]int64{n, 0, 0, 0}, true, true, 2},
		{"answers 400", "", func(s *nntptest.Server) {
			s.AddFault(nntptest.Fault{Cmd: "CHECK", Nth: 7, Code: 400, Text: "going down", Close: true})
		}, [4]int64{n, 0, 0, 0}, true, false, 2},
		{"never answers", "response_timeout = \"300ms\"", func(s *nntptest.Server) {
			s.AddFault(nntptest.Fault{Cmd: "CHECK", Nth: 3, Hang: true})
		}, [4]int64{n, 0, 0, 0}, true, true, 2}, // a slow answer on a loaded machine may also time out
		{"refuses connections at first", "", func(s *nntptest.Server) {
			s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Times: 3, Code: 400, Text: "not now", Close: true})
		}, [4]int64{n, 0, 0, 0}, true, false, 4},
		{"defers everything", "defer_delay = \"20ms\"\ndefer_max_delay = \"40ms\"\nmax_defers = 2", func(s *nntptest.Server) {
			s.SetRule(nntptest.Verdicts(nil, nntptest.Defer))
		}, [4]int64{0, 0, 0, n}, false, false, 1},
		{"defers twice then wants", "defer_delay = \"20ms\"\ndefer_max_delay = \"40ms\"\nmax_defers = 5", func(s *nntptest.Server) {
			m := map[string][]nntptest.Verdict{}
			for i := range n {
				m[fmt.Sprintf("<f%d@t>", i)] = []nntptest.Verdict{nntptest.Defer, nntptest.Defer, nntptest.Want}
			}
			s.SetRule(nntptest.Sequence(m, nntptest.Want))
		}, [4]int64{n, 0, 0, 0}, true, false, 1},
		{"refuses everything", "", func(s *nntptest.Server) {
			s.SetRule(nntptest.Verdicts(nil, nntptest.Refuse))
		}, [4]int64{0, n, 0, 0}, false, false, 1},
		{"rejects everything", "", func(s *nntptest.Server) {
			s.SetRule(nntptest.Verdicts(nil, nntptest.Reject))
		}, [4]int64{0, 0, n, 0}, false, false, 1},
		{"cannot stream", "", nil, [4]int64{n, 0, 0, 0}, true, false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := nntptest.Options{Hostname: "sink"}
			if tc.setup == nil {
				opts.NoStreaming = true
			}
			s := nntptest.Start(t, opts)
			if tc.setup != nil {
				tc.setup(s)
			}
			h := startRelay(t, relayConfigRT(t, rt, t.TempDir(), peerText("p", s, "connections = 2\nwindow = 8\n"+tc.extra)), nil)
			var arts [][]byte
			var ids []string
			for i := range n {
				id := fmt.Sprintf("<f%d@t>", i)
				ids = append(ids, id)
				arts = append(arts, testArticle(id, "misc.test", "up!x", 3))
			}
			if res := h.r.Inject(context.Background(), arts); res.Accepted != n {
				t.Fatalf("inject: %s", res)
			}
			h.settle()
			ps, _ := h.r.PeerStats("p")
			got := [4]int64{ps.Accepted, ps.Refused, ps.Rejected, ps.Dropped}
			if tc.resent {
				got[0], got[1] = got[0]+got[1], 0
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("accepted, refused, rejected, dropped (-want +got):\n%s\n%s", diff, ps.Line())
			}
			h.checkStats()
			if tc.allThere {
				var missing []string
				for _, id := range ids {
					if !s.Has(id) {
						missing = append(missing, id)
					}
				}
				if len(missing) > 0 {
					t.Errorf("sink lacks %d articles: %v", len(missing), missing)
				}
			}
			if s.Conns() < tc.minConns {
				t.Errorf("sink saw %d connections, want at least %d (the fault must fire)", s.Conns(), tc.minConns)
			}
			if tc.setup == nil && s.Count("IHAVE") < n {
				t.Errorf("sink got %d IHAVE, want at least %d", s.Count("IHAVE"), n)
			}
		})
	}
}

// TestShutdownFlushesToBacklog stops a relay whose peer never answers:
// what was in memory and in flight goes to backlog files, and a restart
// delivers it.
func TestShutdownFlushesToBacklog(t *testing.T) { forRuntimes(t, testShutdownFlushesToBacklog) }

func testShutdownFlushesToBacklog(t *testing.T, rt string) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	hang := s.AddFault(nntptest.Fault{Cmd: "CHECK", Hang: true})
	dir := t.TempDir()
	text := peerText("p", s, "connections = 1\nwindow = 4")
	h := startRelay(t, relayConfigRT(t, rt, dir, text), nil)
	var arts [][]byte
	var ids []string
	for i := range 30 {
		id := fmt.Sprintf("<s%d@t>", i)
		ids = append(ids, id)
		arts = append(arts, testArticle(id, "misc.test", "up!x", 3))
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != 30 {
		t.Fatalf("inject: %s", res)
	}
	waitFor(t, 10*time.Second, "CHECKs in flight", func() bool { return s.Count("CHECK") >= 1 }, nil)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	ps, _ := h.r.PeerStats("p")
	if ps.Memory+ps.InFlight != 0 || ps.BacklogArticle != 30 {
		t.Errorf("after shutdown: memory+in-flight %d, backlog %d; want 0 and 30\n%s", ps.Memory+ps.InFlight, ps.BacklogArticle, ps.Line())
	}
	s.RemoveFault(hang)
	s.DropConns()
	h2 := startRelay(t, relayConfigRT(t, rt, dir, text), nil)
	h2.settle()
	for _, id := range ids {
		if !s.Has(id) {
			t.Errorf("%s not delivered after restart", id)
		}
	}
	h2.checkStats()
	ps, _ = h2.r.PeerStats("p")
	if ps.Accepted != 30 {
		t.Errorf("after restart: %s", ps.Line())
	}
}

// TestInjectFiles stores an rnews batch and a single article file.
func TestInjectFiles(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	dir := t.TempDir()
	cfg := relayConfig(t, dir, peerText("p", s, ""))
	r, err := Open(cfg, Options{Logger: testLog(t), NoConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	var batch []byte
	for i := range 5 {
		batch = proto.AppendRnews(batch, testArticle(fmt.Sprintf("<b%d@t>", i), "misc.test", "up!x", 2))
	}
	batch = proto.AppendRnews(batch, testArticle("<b0@t>", "misc.test", "up!x", 2))           // duplicate
	batch = proto.AppendRnews(batch, []byte("From: x@y\nSubject: no id\n\nbody\n"))           // rejected
	batch = proto.AppendRnews(batch, testArticle("<loop@t>", "misc.test", "relay.test!x", 1)) // loop
	res, err := r.InjectReader(context.Background(), bytes.NewReader(batch))
	if err != nil {
		t.Fatal(err)
	}
	single, err := r.InjectReader(context.Background(), bytes.NewReader(testArticle("<single@t>", "misc.test", "up!x", 1)))
	if err != nil {
		t.Fatal(err)
	}
	res.Add(single)
	got := []int{res.Accepted, res.Refused, res.Rejected}
	if diff := cmp.Diff([]int{6, 1, 2}, got); diff != "" {
		t.Errorf("accepted, refused, rejected (-want +got):\n%s\n%s", diff, res)
	}
	if keys := slices.Sorted(maps.Keys(res.Reasons)); len(keys) != 2 {
		t.Errorf("reasons %v, want two distinct", res.Reasons)
	}
	// Each article not stored is named with its reason.
	var notes []string
	for _, n := range res.Notes {
		notes = append(notes, n.Verdict+" "+n.MessageID)
	}
	if diff := cmp.Diff([]string{"refused <b0@t>", "rejected ", "rejected <loop@t>"}, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s\n%v", diff, res.Notes)
	}
	again, err := r.InjectReader(context.Background(), bytes.NewReader(testArticle("<single@t>", "misc.test", "up!x", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(again.Notes), "[refused <single@t>: already in history]"; got != want {
		t.Errorf("injected again: notes %s, want %s", got, want)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// The relay, started later, feeds what inject queued.
	h := startRelay(t, relayConfig(t, dir, peerText("p", s, "")), nil)
	h.settle()
	if got := len(s.AcceptedIDs()); got != 6 {
		t.Errorf("sink accepted %d, want 6", got)
	}
}

// TestFanoutRecovery: articles durable in the spool but in no peer's queue
// (what a crash between the group commit's spool Sync and the queues' Sync
// leaves) are routed again at start, from the fan-out position.
func TestFanoutRecovery(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	dir := t.TempDir()
	text := peerText("p", s, "")
	h := startRelay(t, relayConfig(t, dir, text), nil)
	var arts [][]byte
	for i := range 5 {
		arts = append(arts, testArticle(fmt.Sprintf("<before%d@t>", i), "misc.test", "up!x", 2))
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != 5 {
		t.Fatalf("inject: %s", res)
	}
	h.settle()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	// Store three more behind the relay's back: in the spool, in no queue.
	sp, err := spoolfs.OpenSpool(filepath.Join(dir, "spool"), spoolfs.SpoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var late []string
	for i := range 3 {
		id := fmt.Sprintf("<late%d@t>", i)
		late = append(late, id)
		if _, err := sp.Put(id, proto.ToWire(testArticle(id, "misc.test", "relay.test!up!x", 2)), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}

	h2 := startRelay(t, relayConfig(t, dir, text), nil)
	h2.settle()
	for _, id := range late {
		if !s.Has(id) {
			t.Errorf("%s was never routed to the peer", id)
		}
	}
	ps, _ := h2.r.PeerStats("p")
	if ps.Accepted != 3 || ps.Offered != 3 {
		t.Errorf("after restart: %s; want exactly the 3 late articles offered and accepted", ps.Line())
	}
	h2.checkStats()
}

// TestExpiry: articles expire from the spool while waiting for a peer
// that is down; when it comes back their copies are settled as missing,
// and the history forgets old ids. The counts still add up.
func TestExpiry(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	down := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
	cfg := relayConfig(t, t.TempDir(), "spool_max_age = \"1d\"\nhistory_retention = \"2d\"\n"+peerText("p", s, "connections = 1"))
	h := startRelay(t, cfg, func(o *Options) { o.SegmentSize = 4 << 10 })
	var arts [][]byte
	for i := range 40 {
		arts = append(arts, testArticle(fmt.Sprintf("<old%d@t>", i), "misc.test", "up!x", 10))
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != 40 {
		t.Fatalf("inject: %s", res)
	}
	before := h.r.Spool().History().Len()
	h.r.Expire(time.Now().Add(36 * time.Hour))
	if h.r.Spool().Bytes() >= 40*800 {
		t.Errorf("spool still holds %d bytes after expiry", h.r.Spool().Bytes())
	}
	if got := h.r.Spool().History().Len(); got != before {
		t.Errorf("history dropped entries younger than history_retention: %d -> %d", before, got)
	}
	s.RemoveFault(down)
	h.settle()
	ps, _ := h.r.PeerStats("p")
	if ps.Missing == 0 || ps.Missing+ps.Accepted != 40 {
		t.Errorf("after expiry: %s; want the expired copies missing, the rest accepted", ps.Line())
	}
	h.checkStats()
	h.r.Expire(time.Now().Add(72 * time.Hour))
	if got := h.r.Spool().History().Len(); got != 0 {
		t.Errorf("history holds %d ids older than history_retention", got)
	}
}
