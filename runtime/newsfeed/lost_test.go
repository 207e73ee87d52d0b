package newsfeed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/newsflow/newsflow/spoolfs"

	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/testpeer/logbuf"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestLostReplayFileReported deletes the replay file a peer's checkpoint
// names while the relay is down: the next start counts the lost file in
// the peer's stats, so acknowledged articles never go silently.
func TestLostReplayFileReported(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	dir := t.TempDir()
	text := peerText("p", s, "connections = 1")
	h := startRelay(t, relayConfig(t, dir, text), nil)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	// What the queue leaves while it replays p.P, once p.P is deleted.
	if err := os.WriteFile(filepath.Join(dir, "backlog", "p.P.ckpt"), []byte("4096\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h2 := startRelay(t, relayConfig(t, dir, text), nil)
	ps, _ := h2.r.PeerStats("p")
	if ps.LostFiles != 1 {
		t.Errorf("lost files = %d, want 1\n%s", ps.LostFiles, ps.Line())
	}
	if _, err := os.Stat(filepath.Join(dir, "backlog", "p.P.ckpt")); !os.IsNotExist(err) {
		t.Errorf("checkpoint of the lost file still there: %v", err)
	}
}

// TestLostBacklogArticlesCounted deletes the backlog file that holds a hung
// peer's 5 backlogged articles while the relay is down: the next start counts the file and its 5 articles in the peer's
// stats, status and metrics, and offered = accepted + refused + rejected +
// dropped + missing + lost + queued still holds.
func TestLostBacklogArticlesCounted(t *testing.T) {
	h2, s, ids := backlogRestart(t, "goroutine", "", []int{3, 3, 3, 3, 3}, func(spoolDir string, _ []spoolfs.Token) {
		bdir := filepath.Join(filepath.Dir(filepath.Dir(spoolDir)), "backlog")
		// At the stop the queue wrote the articles to a .B file, or had
		// already moved that file to p.P to send it again.
		files, _ := filepath.Glob(filepath.Join(bdir, "p.B.*"))
		if replay := filepath.Join(bdir, "p.P"); statOK(replay) {
			files = append(files, replay)
		}
		if len(files) != 1 {
			t.Fatalf("want the one backlog file of p (.B or .P), found %v", files)
		}
		if err := os.Remove(files[0]); err != nil {
			t.Fatal(err)
		}
	})
	h2.settle()
	h2.checkStats()
	ps, _ := h2.r.PeerStats("p")
	if ps.Lost != 5 || ps.LostFiles != 1 || ps.Offered != 5 {
		t.Errorf("want 5 offered (found at start), 5 lost in 1 file: lost %d files %d\n%s", ps.Lost, ps.LostFiles, ps.Line())
	}
	for _, id := range ids {
		if s.Has(id) {
			t.Errorf("the peer got %s from a deleted file", id)
		}
	}
	if got := lostMetric(t, h2.r, "p"); got != 5 {
		t.Errorf(`newsfeed_peer_articles_total{peer="p",outcome="lost"} = %v, want 5`, got)
	}
}

// lostMetric reads the peer's lost articles from the metrics collector.
func lostMetric(t *testing.T, r *Relay, peer string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{r: r})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "newsfeed_peer_articles_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["peer"] == peer && labels["outcome"] == "lost" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// TestDamagedArticleNotSent flips 32 bytes inside a large stored article
// (one that leaves by sendfile) while the relay is down with it in the
// peer's backlog.
// After restart the article must not reach the peer: it is settled as
// missing, counted, and forgotten by the history; its neighbours go out.
func TestDamagedArticleNotSent(t *testing.T) { forRuntimes(t, testDamagedArticleNotSent) }

// backlogRestart stores articles of the given body lines for peer p (one
// connection, and the settings in extra) while p hangs, stops the relay
// (they go to p's backlog), applies damage to the spool directory, and
// starts the relay again with p healthy.
func backlogRestart(t *testing.T, rt, extra string, lines []int, damage func(spoolDir string, toks []spoolfs.Token)) (*relayHarness, *nntptest.Server, []string) {
	return backlogRestartOpts(t, rt, extra, lines, damage, nil)
}

// backlogRestartOpts is backlogRestart with mod applied to the second
// relay's options.
func backlogRestartOpts(t *testing.T, rt, extra string, lines []int, damage func(spoolDir string, toks []spoolfs.Token), mod func(*Options)) (*relayHarness, *nntptest.Server, []string) {
	t.Helper()
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	hang := s.AddFault(nntptest.Fault{Cmd: "CHECK", Hang: true})
	dir := t.TempDir()
	text := peerText("p", s, "connections = 1\n"+extra)
	h := startRelay(t, relayConfigRT(t, rt, dir, text), nil)
	var ids []string
	var arts [][]byte
	for i, n := range lines {
		id := fmt.Sprintf("<art%d@t>", i)
		ids = append(ids, id)
		arts = append(arts, testArticle(id, "misc.test", "up!x", n))
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != len(arts) {
		t.Fatalf("inject: %s", res)
	}
	var toks []spoolfs.Token
	for _, id := range ids {
		e, _ := h.r.Spool().History().Lookup(id)
		toks = append(toks, e.Token)
	}
	// Inject returns once the articles are durable in the spool; the
	// fan-out routes them to p's queue a moment later. Stopped before
	// that, they would be re-routed at the next start instead of being
	// written to p's backlog file, which damage may want to find.
	waitFor(t, 30*time.Second, "p's queue to hold every article", func() bool {
		return h.peer("p").Queued == int64(len(lines))
	}, func() string { return h.r.StatsLines() })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	damage(filepath.Join(dir, "spool", "spool"), toks)
	s.RemoveFault(hang)
	s.DropConns()
	return startRelay(t, relayConfigRT(t, rt, dir, text), mod), s, ids
}

func segPath(spoolDir string, tok spoolfs.Token) string {
	return filepath.Join(spoolDir, fmt.Sprintf("%08x.seg", tok.Seg))
}

func testDamagedArticleNotSent(t *testing.T, rt string) {
	h2, s, ids := backlogRestart(t, rt, "", []int{15000, 15000, 15000}, func(dir string, toks []spoolfs.Token) {
		tok := toks[1]
		if tok.Len <= driver.CopyBody {
			t.Fatalf("article of %d octets: want one over %d, sent by sendfile", tok.Len, driver.CopyBody)
		}
		f, err := os.OpenFile(segPath(dir, tok), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(bytes.Repeat([]byte("X"), 32), int64(tok.Off)+int64(tok.Len)/2); err != nil {
			t.Fatal(err)
		}
	})
	h2.settle()
	for i, id := range ids {
		if got := s.Has(id); got != (i != 1) {
			t.Errorf("peer has %s: %v, want %v", id, got, i != 1)
		}
	}
	h2.checkStats()
	ps, _ := h2.r.PeerStats("p")
	if ps.Missing != 1 || ps.Accepted != 2 {
		t.Errorf("want 2 accepted, 1 missing: %s", ps.Line())
	}
	if _, ok := h2.r.Spool().History().Lookup(ids[1]); ok {
		t.Errorf("the damaged %s is still in the history: upstream could never offer it again", ids[1])
	}
	if n := h2.r.Status().LostArticles; n != 1 {
		t.Errorf("status lost_articles = %d, want 1", n)
	}
}

// TestTruncatedSegmentFeed cuts the spool segment inside the second of
// five backlogged articles: an unreadable article must neither drop the
// peer connection (doubling the backoff) nor stay in the history (which
// would answer 438 for a lost one). After restart the one before the cut
// reaches the peer, the four after it are settled as
// missing without a single connection failure (an unreadable article
// does not drop the connection), and upstream may offer them again (the
// history does not answer 438 for them).
func TestTruncatedSegmentFeed(t *testing.T) { forRuntimes(t, testTruncatedSegmentFeed) }

func testTruncatedSegmentFeed(t *testing.T, rt string) {
	h2, s, ids := backlogRestart(t, rt, "", []int{3, 3, 3, 3, 3}, func(dir string, toks []spoolfs.Token) {
		if err := os.Truncate(segPath(dir, toks[1]), int64(toks[1].Off)+5); err != nil {
			t.Fatal(err)
		}
	})
	h2.settle()
	for i, id := range ids {
		if got := s.Has(id); got != (i == 0) {
			t.Errorf("peer has %s: %v, want %v", id, got, i == 0)
		}
	}
	h2.checkStats()
	ps, _ := h2.r.PeerStats("p")
	if ps.Missing != 4 || ps.Accepted != 1 {
		t.Errorf("want 1 accepted, 4 missing: %s", ps.Line())
	}
	if n := h2.r.peers[0].connFails.Load(); n != 0 {
		t.Errorf("%d peer connection failures, want 0", n)
	}
	if n := h2.r.Status().LostArticles; n != 4 {
		t.Errorf("status lost_articles = %d, want 4", n)
	}
	c := dialIngest(t, h2.r.Addr().String())
	if r := c.cmd("CHECK " + ids[3]); !strings.HasPrefix(r, "238") {
		t.Errorf("CHECK of a lost article: %q, want 238 (offer it again)", r)
	}
}

// TestMissingRunLongerThanWindow backlogs more articles than the queue
// agent takes in one round (window 1: two, the feed's room and a window
// ready beyond it) and loses every one of them with the spool segment.
// With nothing in flight, no answer wakes the connection: the agent must
// go on through the missing ones by itself until the queue is empty, and
// an article stored afterwards must still reach the peer. (The agent
// counted the missing entries as taken, stopped after one round and
// left the rest queued for ever.)
func TestMissingRunLongerThanWindow(t *testing.T) { forRuntimes(t, testMissingRunLongerThanWindow) }

func testMissingRunLongerThanWindow(t *testing.T, rt string) {
	h2, s, ids := backlogRestart(t, rt, "window = 1", []int{3, 3, 3, 3, 3}, func(dir string, toks []spoolfs.Token) {
		if err := os.Truncate(segPath(dir, toks[0]), int64(toks[0].Off)); err != nil {
			t.Fatal(err)
		}
	})
	h2.settle()
	for _, id := range ids {
		if s.Has(id) {
			t.Errorf("peer has the lost %s", id)
		}
	}
	id := "<after@t>"
	if res := h2.r.Inject(context.Background(), [][]byte{testArticle(id, "misc.test", "up!x", 3)}); res.Accepted != 1 {
		t.Fatalf("inject: %s", res)
	}
	h2.settle()
	if !s.Has(id) {
		t.Errorf("peer does not have %s, stored after the lost ones", id)
	}
	h2.checkStats()
	ps, _ := h2.r.PeerStats("p")
	if ps.Missing != int64(len(ids)) || ps.Accepted != 1 {
		t.Errorf("want 1 accepted, %d missing: %s", len(ids), ps.Line())
	}
}

// TestLostIsOneNumber cuts the spool segment inside the fifth of six
// backlogged articles and corrupts the second while the relay is down:
// three acknowledged articles are lost, two found at start and one when
// read to be sent. lost_articles says 3 in the status, the metrics and the
// stats line, and the log states the running total each time it changes.
func TestLostIsOneNumber(t *testing.T) {
	var logBuf logbuf.Buffer
	h2, _, _ := backlogRestartOpts(t, "goroutine", "", []int{600, 600, 600, 3, 3, 3}, func(dir string, toks []spoolfs.Token) {
		f, err := os.OpenFile(segPath(dir, toks[1]), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(bytes.Repeat([]byte("X"), 32), int64(toks[1].Off)+int64(toks[1].Len)/2); err != nil {
			t.Fatal(err)
		}
		if toks[4].Seg != toks[1].Seg {
			t.Fatalf("articles in segments %d and %d, want one", toks[1].Seg, toks[4].Seg)
		}
		if err := f.Truncate(int64(toks[4].Off) + 5); err != nil {
			t.Fatal(err)
		}
	}, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(&logBuf, t.Output()), &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	h2.settle()
	h2.checkStats()
	if n := h2.r.Status().LostArticles; n != 3 {
		t.Errorf("status lost_articles = %d, want 3", n)
	}
	if got := spoolLostMetric(t, h2.r); got != 3 {
		t.Errorf("newsfeed_spool_lost_articles_total = %v, want 3", got)
	}
	h2.r.logStats(false)
	log := logBuf.String()
	for _, want := range []string{"lost_articles=2", "lost_articles=3"} {
		if !regexp.MustCompile(`acknowledged articles lost.* ` + want).MatchString(log) {
			t.Errorf("no log line with the running total %s", want)
		}
	}
	if !regexp.MustCompile(`msg="stats \(ingest\)".* lost_articles=3`).MatchString(log) {
		t.Errorf("stats line without lost_articles=3")
	}
	if regexp.MustCompile(`msg=stats .* lost_articles=0`).MatchString(log) {
		t.Errorf("a stats line says lost_articles=0")
	}
}

// spoolLostMetric reads newsfeed_spool_lost_articles_total.
func spoolLostMetric(t *testing.T, r *Relay) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{r: r})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "newsfeed_spool_lost_articles_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return -1
}

// statOK reports whether path exists.
func statOK(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
