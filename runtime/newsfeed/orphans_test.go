package newsfeed

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/logbuf"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestRemovedPeerBacklog: a peer removed by a reload leaves its backlog
// behind at the stop; the next start reports it with its article count,
// and Drop removes it, while refusing a configured peer.
func TestRemovedPeerBacklog(t *testing.T) {
	a := nntptest.Start(t, nntptest.Options{Hostname: "a"})
	gone := nntptest.Start(t, nntptest.Options{Hostname: "gone"})
	gone.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Drop: true})
	dir := t.TempDir()
	file := filepath.Join(dir, "newsfeed.toml")
	head := fmt.Sprintf("listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"relay.test\"\nstats_interval = \"1h\"\n", filepath.Join(dir, "spool"))
	write := func(text string) {
		if err := os.WriteFile(file, []byte(head+text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(peerText("a", a, "") + peerText("gone", gone, ""))
	cfg, err := LoadConfig(file)
	if err != nil {
		t.Fatal(err)
	}
	h := startRelay(t, cfg, nil)
	h.feedAll(arts("o", 5))
	write(peerText("a", a, ""))
	if _, err := h.r.ReloadConfig(); err != nil {
		t.Fatal(err)
	}
	// The removed peer's queue stays in sight until the stop.
	if ps := h.r.Status().Peers; len(ps) != 2 || ps[0].Name != "a" || ps[0].Removed || ps[1].Name != "gone" || !ps[1].Removed || ps[1].Queued != 5 {
		t.Errorf("status after the reload: %+v; want a, then gone removed with 5 queued", ps)
	}
	// newsfeed ctl drop names the command: the messages do not repeat it.
	if _, err := h.r.Drop("gone"); err == nil || strings.HasPrefix(err.Error(), "drop:") {
		t.Errorf("Drop of a peer retired by a reload of this run: %v", err)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	cfg, err = LoadConfig(file)
	if err != nil {
		t.Fatal(err)
	}
	logb := &logbuf.Buffer{}
	h = startRelay(t, cfg, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logb, nil)) })
	if !strings.Contains(logb.String(), "backlog of a peer no longer configured") || !strings.Contains(logb.String(), "peer=gone articles=5") {
		t.Errorf("the start did not report gone's backlog of 5 articles:\n%s", logb.String())
	}
	if _, err := h.r.Drop("a"); !errors.Is(err, errConfiguredPeer) || strings.HasPrefix(err.Error(), "drop:") {
		t.Errorf("Drop(a), a configured peer: %v", err)
	}
	msg, err := h.r.Drop("gone")
	if err != nil || !strings.Contains(msg, "5 article(s) in 1 file(s)") {
		t.Fatalf("Drop(gone) = %q, %v", msg, err)
	}
	left, _ := backlogPeers(filepath.Join(dir, "spool", "backlog"))
	if len(left["gone"]) != 0 {
		t.Errorf("files of gone left after Drop: %v", left["gone"])
	}
	if _, err := h.r.Drop("gone"); !errors.Is(err, errNoPeer) || strings.HasPrefix(err.Error(), "drop:") {
		t.Errorf("Drop(gone) again: %v, want no such peer", err)
	}
	h.stop()
	logb = &logbuf.Buffer{}
	startRelay(t, cfg, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logb, nil)) }).stop()
	if strings.Contains(logb.String(), "no longer configured") {
		t.Errorf("after Drop, the start still reports a backlog:\n%s", logb.String())
	}
}
