package newsfeed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestChannelGoneArticles feeds the channel tokens of articles a real INN
// no longer holds (cancelled): a batch of only such tokens, as innd's
// channel and as a -backlog file, and a file that mixes them with live
// ones. Each gone article is counted missing and skipped, the live ones
// are stored, and the backlog file drains.
func TestChannelGoneArticles(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skip(err)
	}
	inn := inntest.Start(t, inntest.Options{})
	sink := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	h := startRelay(t, relayConfig(t, t.TempDir(), peerText("sink", sink, "")), nil)

	arts := map[string][]byte{}
	var ids []string
	for i := range 6 {
		id := fmt.Sprintf("<gone%d@channel.test>", i)
		ids = append(ids, id)
		arts[id] = testArticle(id, "local.test", "up.example!not-for-mail", 2)
	}
	postToINN(t, inn.Addr(), arts)
	toks, err := inn.Tokens(ids)
	if err != nil || len(toks) != len(ids) {
		t.Fatalf("tokens: %v (%d of %d)", err, len(toks), len(ids))
	}
	// The first four are cancelled: their tokens stay in the lines, their
	// articles leave INN's storage.
	for _, id := range ids[:4] {
		if out, err := inn.Ctlinnd("cancel", id); err != nil {
			t.Fatalf("cancel %s: %v %s", id, err, out)
		}
	}
	sm := SM{Path: smWrapper(t, inn)}
	lines := func(ids []string) string {
		var b strings.Builder
		for _, id := range ids {
			fmt.Fprintf(&b, "%s %s sink\n", toks[id], id)
		}
		return b.String()
	}
	ctx := context.Background()

	res, err := h.r.RunChannel(ctx, strings.NewReader(lines(ids[:2])), sm)
	if err != nil {
		t.Fatalf("channel of gone articles only: %v", err)
	}
	if res.Missing != 2 || res.Stored.Accepted != 0 {
		t.Errorf("channel of gone articles only: missing %d stored %s, want missing 2, nothing stored", res.Missing, res.Stored)
	}

	backlog := filepath.Join(t.TempDir(), "newsflow!")
	os.WriteFile(backlog, []byte(lines(ids[2:4])), 0o644)
	res, err = h.r.ReadChannelFile(ctx, backlog, sm)
	if err != nil {
		t.Fatalf("backlog file of gone articles only: %v", err)
	}
	if res.Missing != 2 || statOK(backlog) {
		t.Errorf("backlog file of gone articles only: missing %d, file left %v; want 2 missing, file removed", res.Missing, statOK(backlog))
	}

	os.WriteFile(backlog, []byte(lines(ids)), 0o644)
	res, err = h.r.ReadChannelFile(ctx, backlog, sm)
	if err != nil {
		t.Fatalf("backlog file of gone and live articles: %v", err)
	}
	if res.Missing != 4 || res.Stored.Accepted != 2 || statOK(backlog) {
		t.Errorf("mixed backlog file: missing %d stored %s, file left %v; want 4 missing, 2 accepted, file removed", res.Missing, res.Stored, statOK(backlog))
	}
	h.settle()
	for _, id := range ids[4:] {
		if !sink.Has(id) {
			t.Errorf("live article %s did not reach the sink", id)
		}
	}
}

// TestChannelFetchFails keeps an sm that cannot work (it reports no token
// and exits 1, as when its storage cannot be opened) an error of the run:
// nothing is counted missing on its word.
func TestChannelFetchFails(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "sm")
	os.WriteFile(bad, []byte("#!/bin/sh\necho 'sm: cannot initialize storage manager: no storage.conf' >&2\nexit 1\n"), 0o755)
	arts, err := SM{Path: bad}.Fetch(context.Background(), []string{"@0101@", "@0102@"})
	if err == nil || len(arts) != 0 {
		t.Fatalf("Fetch with a broken sm = %d articles, %v; want an error", len(arts), err)
	}
	gone := filepath.Join(dir, "sm-gone")
	os.WriteFile(gone, []byte("#!/bin/sh\nfor t; do [ \"$t\" = -S ] || echo \"sm: could not retrieve $t\" >&2; done\nexit 1\n"), 0o755)
	arts, err = SM{Path: gone}.Fetch(context.Background(), []string{"@0101@", "@0102@"})
	if err != nil || len(arts) != 0 {
		t.Fatalf("Fetch of gone tokens = %d articles, %v; want none, no error", len(arts), err)
	}
}

// smWrapper is a program that runs INN's sm against inn's configuration,
// as innd's channel would.
func smWrapper(t *testing.T, inn *inntest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sm")
	script := "#!/bin/sh\nexec env " + strings.Join(inn.Env(), " ") + " /usr/lib/news/bin/sm \"$@\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
