package newsfeed

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

// postToINN gives articles to innd with IHAVE, as a peer would.
func postToINN(t *testing.T, addr string, arts map[string][]byte) {
	t.Helper()
	c := dialIngest(t, addr)
	for id, a := range arts {
		if r := c.cmd("IHAVE " + id); !strings.HasPrefix(r, "335") {
			t.Fatalf("innd: IHAVE %s: %q", id, r)
		}
		if r := c.cmd(strings.TrimSuffix(string(proto.ToWire(a)), "\r\n")); !strings.HasPrefix(r, "235") {
			t.Fatalf("innd: article %s: %q", id, r)
		}
	}
}

// TestINNFeedsRelay has a real INN feed the relay's ingest listener, once
// with innfeed (streaming, CHECK/TAKETHIS) and once with innxmit (IHAVE),
// and finds every article in the relay's spool with our Path entry first.
func TestINNFeedsRelay(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skip(err)
	}
	inn := inntest.Start(t, inntest.Options{})
	h := startRelay(t, relayConfig(t, t.TempDir(), ""), nil)
	addr := h.r.Addr().String()
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, batch []byte) error
	}{
		{"innfeed", func(ctx context.Context, batch []byte) error {
			res, err := inn.RunInnfeed(ctx, batch, inntest.InnfeedOptions{Addr: addr, Connections: 2})
			if err == nil && res.Unsent != 0 {
				err = fmt.Errorf("innfeed left %d unsent:\n%s", res.Unsent, res.Log)
			}
			return err
		}},
		{"innxmit", func(ctx context.Context, batch []byte) error {
			res, err := inn.RunInnxmit(ctx, batch, inntest.InnxmitOptions{Addr: addr, NoStreaming: true})
			if err == nil && res.Unsent != 0 {
				err = fmt.Errorf("innxmit left %d unsent:\n%s", res.Unsent, res.Output)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arts := map[string][]byte{}
			var ids []string
			for i := range 50 {
				id := fmt.Sprintf("<%s%d@inn.test>", tc.name, i)
				ids = append(ids, id)
				arts[id] = testArticle(id, "local.test", "origin.test!not-for-mail", 5+i)
			}
			postToINN(t, inn.Addr(), arts)
			batch, err := inn.BatchLines(ids)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := tc.run(ctx, batch); err != nil {
				t.Fatal(err)
			}
			prefix := []byte("Path: relay.test!" + inn.PathHost() + "!origin.test!")
			for _, id := range ids {
				e, ok := h.r.Spool().History().Lookup(id)
				if !ok || e.Token.IsZero() {
					t.Errorf("%s not stored by the relay", id)
					continue
				}
				wire, err := h.r.Spool().Get(e.Token)
				if err != nil {
					t.Errorf("%s: %v", id, err)
					continue
				}
				if !bytes.Contains(wire, prefix) {
					t.Errorf("%s stored without %q:\n%.300s", id, prefix, wire)
				}
			}
		})
	}
}

// TestRelayFeedsINN has the relay feed a real innd (streaming, and IHAVE
// for an innd that does not stream) and checks every article arrived.
func TestRelayFeedsINN(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skip(err)
	}
	for _, noStream := range []bool{false, true} {
		t.Run(fmt.Sprintf("nostreaming=%v", noStream), func(t *testing.T) {
			inn := inntest.Start(t, inntest.Options{NoStreaming: noStream})
			host, port, _ := strings.Cut(inn.Addr(), ":")
			text := fmt.Sprintf("[[peer]]\nname = \"inn\"\nhost = %q\nport = %s\nconnections = 2\npathname = %q\n", host, port, inn.PathHost())
			h := startRelay(t, relayConfig(t, t.TempDir(), text), nil)
			var arts [][]byte
			var ids []string
			for i := range 100 {
				id := fmt.Sprintf("<tofeed%d.%v@relay.test>", i, noStream)
				ids = append(ids, id)
				arts = append(arts, testArticle(id, "local.test", "origin.test!not-for-mail", 3+i%20))
			}
			// One article has already been through INN: its Path names it,
			// so the relay must not offer it back.
			looped := "<looped@relay.test>"
			arts = append(arts, testArticle(looped, "local.test", inn.PathHost()+"!origin.test!not-for-mail", 3))
			if res := h.r.Inject(context.Background(), arts); res.Accepted != len(arts) {
				t.Fatalf("inject: %s", res)
			}
			h.settle()
			for _, id := range ids {
				if !inn.HasArticle(id) {
					t.Errorf("innd lacks %s", id)
				}
			}
			if inn.HasArticle(looped) {
				t.Errorf("the relay offered %s to the peer its Path names", looped)
			}
			ps, _ := h.r.PeerStats("inn")
			if ps.Accepted != int64(len(ids)) || ps.SkippedPath != 1 {
				t.Errorf("stats: %s skipped-path %d; want %d accepted, 1 skipped", ps.Line(), ps.SkippedPath, len(ids))
			}
			h.checkStats()
		})
	}
}
