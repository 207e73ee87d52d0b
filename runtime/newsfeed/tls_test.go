package newsfeed

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
	"github.com/newsflow/newsflow/runtime/testpeer/logbuf"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestOutboundTLS feeds peers over TLS (from the first byte, and after
// STARTTLS) with the certificate verified against ca_file, and checks that
// a peer whose certificate cannot be verified gets nothing: its articles
// wait in the queue and the connection says why.
func TestOutboundTLS(t *testing.T) { forRuntimes(t, testOutboundTLS) }

// With runtime = "epoll" the TLS peers stay on the goroutine runtime.
func testOutboundTLS(t *testing.T, rt string) {
	implicit := nntptest.Start(t, nntptest.Options{Hostname: "implicit", TLS: nntptest.ImplicitTLS})
	starttls := nntptest.Start(t, nntptest.Options{Hostname: "starttls", TLS: nntptest.StartTLS})
	untrusted := nntptest.Start(t, nntptest.Options{Hostname: "untrusted", TLS: nntptest.ImplicitTLS})
	dir := t.TempDir()
	caFile := func(s *nntptest.Server) string {
		name := filepath.Join(dir, s.HostPort()+".pem")
		if err := os.WriteFile(name, s.CertPEM(), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	text := peerText("implicit", implicit, fmt.Sprintf("tls = true\nca_file = %q", caFile(implicit))) +
		peerText("starttls", starttls, fmt.Sprintf("starttls = true\nca_file = %q", caFile(starttls))) +
		peerText("untrusted", untrusted, "tls = true\nconnections = 1")
	h := startRelay(t, relayConfigRT(t, rt, filepath.Join(dir, "spool"), text), nil)
	var arts [][]byte
	var ids []string
	for i := range 20 {
		id := fmt.Sprintf("<tls%d@t>", i)
		ids = append(ids, id)
		arts = append(arts, testArticle(id, "misc.test", "up!x", 4))
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != 20 {
		t.Fatalf("inject: %s", res)
	}
	waitFor(t, 30*tlsWait, "the TLS peers to get every article", func() bool {
		for _, id := range ids {
			if !implicit.Has(id) || !starttls.Has(id) {
				return false
			}
		}
		return true
	}, h.r.StatsLines)
	waitFor(t, 30*tlsWait, "the untrusted peer's connection to fail", func() bool {
		ps, _ := h.r.PeerStats("untrusted")
		return len(ps.Connections) == 1 && strings.Contains(ps.Connections[0].LastErr, "certificate")
	}, func() string { ps, _ := h.r.PeerStats("untrusted"); return fmt.Sprintf("%+v", ps.Connections) })
	if n := len(untrusted.AcceptedIDs()); n != 0 {
		t.Errorf("the peer with an unverifiable certificate got %d articles", n)
	}
	ps, _ := h.r.PeerStats("untrusted")
	if ps.Queued != 20 {
		t.Errorf("untrusted peer: %s; want all 20 still queued", ps.Line())
	}
	if starttls.Count("STARTTLS") == 0 {
		t.Error("the starttls peer never got STARTTLS")
	}
	if n := h.r.loop.conns(); n != 0 {
		t.Errorf("%d TLS connections were attached to the epoll loop, want none", n)
	}
	h.checkStats()
}

const tlsWait = time.Second

// TestEmbeddedDefaultSaysSo runs the relay on the embedded default (moved
// to a free port and a temporary spool) and checks that the log says so.
func TestEmbeddedDefaultSaysSo(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	cfg, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = "127.0.0.1:0"
	var log logbuf.Buffer
	h := startRelay(t, cfg, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`msg="no -config given: running the embedded default configuration (ingest only, no peers)"`,
		"spool=" + cfg.Spool,
		`msg="no peers configured: articles are stored but fed to no one"`,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
	if !strings.HasPrefix(cfg.Spool, os.Getenv("XDG_STATE_HOME")) {
		t.Errorf("spool %s is not under XDG_STATE_HOME", cfg.Spool)
	}
}

// TestBacklogLimit: a peer that stays down, with a small backlog_max_bytes,
// has its oldest backlog dropped; the drop is counted and logged, and the
// counts still add up.
func TestBacklogLimit(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "down"})
	s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
	var log logbuf.Buffer
	cfg := relayConfig(t, t.TempDir(), peerText("p", s, "backlog_max_bytes = 1000\nconnections = 1"))
	h := startRelay(t, cfg, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&log, nil))
		o.QueueConfig = func(c *queue.Config) { c.RotateBytes = 500; c.RotateInterval = 1 }
	})
	for round := range 4 {
		var arts [][]byte
		for i := range 10 {
			arts = append(arts, testArticle(fmt.Sprintf("<lim%d.%d@t>", round, i), "misc.test", "up!x", 1))
		}
		if res := h.r.Inject(context.Background(), arts); res.Accepted != 10 {
			t.Fatalf("inject: %s", res)
		}
	}
	waitFor(t, 10*tlsWait, "backlog over the limit to be dropped", func() bool {
		ps, _ := h.r.PeerStats("p")
		return ps.Dropped > 0
	}, h.r.StatsLines)
	ps, _ := h.r.PeerStats("p")
	if ps.BacklogBytes > 1000+600 {
		t.Errorf("backlog holds %d bytes, limit 1000: %s", ps.BacklogBytes, ps.Line())
	}
	if !strings.Contains(log.String(), "reason=backlog-bytes") {
		t.Errorf("the drop is not logged with its reason:\n%s", log.String())
	}
	h.checkStats()
}

// TestStatsInterval: every stats_interval the relay logs one line per peer
// (and one for ingest) whose counts add up.
func TestStatsInterval(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	var log logbuf.Buffer
	cfg := relayConfig(t, t.TempDir(), "stats_interval = \"1s\"\n"+peerText("p", s, "")+peerText("q", s, `groups = ["comp.*"]`))
	h := startRelay(t, cfg, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	if res := h.r.Inject(context.Background(), [][]byte{testArticle("<st@t>", "misc.test", "up!x", 1)}); res.Accepted != 1 {
		t.Fatalf("inject: %s", res)
	}
	h.settle()
	waitFor(t, 10*time.Second, "a periodic stats line", func() bool {
		return strings.Contains(log.String(), "msg=stats peer=q")
	}, log.String)
	for _, want := range []string{
		`msg="stats (ingest)" connections=0 accepted=1`,
		"msg=stats peer=p offered=1 accepted=1 refused=0 rejected=0 deferred=0 dropped=0 missing=0 too_old=0 queued=0 backlog=0 backlog_bytes=0 rate=",
		"msg=stats peer=q offered=0 accepted=0",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}

// TestPeerAuthAndStreamingOn: a peer that requires AUTHINFO gets the
// configured credentials; a peer that cannot stream is not fed when
// streaming = "on", and the connection says why.
func TestPeerAuthAndStreamingOn(t *testing.T) {
	auth := nntptest.Start(t, nntptest.Options{Hostname: "auth", Auth: &nntptest.Auth{User: "feeder", Pass: "s3cret", Required: true}})
	nostream := nntptest.Start(t, nntptest.Options{Hostname: "nostream", NoStreaming: true})
	text := peerText("auth", auth, "username = \"feeder\"\npassword = \"s3cret\"") +
		peerText("nostream", nostream, "streaming = \"on\"\nconnections = 1")
	h := startRelay(t, relayConfig(t, t.TempDir(), text), nil)
	var arts [][]byte
	for i := range 10 {
		arts = append(arts, testArticle(fmt.Sprintf("<au%d@t>", i), "misc.test", "up!x", 2))
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != 10 {
		t.Fatalf("inject: %s", res)
	}
	waitFor(t, 10*time.Second, "the auth peer to get everything", func() bool { return len(auth.AcceptedIDs()) == 10 }, h.r.StatsLines)
	if auth.Count("AUTHINFO") < 2 {
		t.Errorf("auth peer saw %d AUTHINFO commands, want USER and PASS", auth.Count("AUTHINFO"))
	}
	waitFor(t, 10*time.Second, "the non-streaming peer's connection to fail", func() bool {
		ps, _ := h.r.PeerStats("nostream")
		return len(ps.Connections) == 1 && strings.Contains(ps.Connections[0].LastErr, "streaming")
	}, func() string { ps, _ := h.r.PeerStats("nostream"); return fmt.Sprintf("%+v", ps.Connections) })
	if n := nostream.Count("IHAVE"); n != 0 {
		t.Errorf("streaming = \"on\" but the peer got %d IHAVE", n)
	}
	h.checkStats()
}
