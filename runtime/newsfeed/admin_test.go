package newsfeed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestAdmin reads the Prometheus metrics, the status page and its JSON
// from the admin listener after articles went through.
func TestAdmin(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	cfg := relayConfig(t, t.TempDir(), "admin = \"127.0.0.1:0\"\n"+peerText("p", s, `groups = ["misc.*"]`))
	h := startRelay(t, cfg, nil)
	var arts [][]byte
	for i := range 3 {
		arts = append(arts, testArticle(fmt.Sprintf("<adm%d@t>", i), "misc.test", "up!x", 2))
	}
	arts = append(arts, testArticle("<other@t>", "comp.test", "up!x", 2))
	if res := h.r.Inject(context.Background(), arts); res.Accepted != 4 {
		t.Fatalf("inject: %s", res)
	}
	h.settle()
	base := "http://" + h.r.AdminAddr().String()
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return string(b)
	}
	metrics := get("/metrics")
	for _, want := range []string{
		`newsfeed_peer_articles_total{outcome="offered",peer="p"} 3`,
		`newsfeed_peer_articles_total{outcome="accepted",peer="p"} 3`,
		`newsfeed_peer_skipped_total{peer="p",reason="groups"} 1`,
		`newsfeed_peer_queued_articles{peer="p",where="backlog"} 0`,
		`newsfeed_ingest_total{outcome="accepted"} 4`,
		`newsfeed_accepting 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	var st Status
	if err := json.Unmarshal([]byte(get("/status.json")), &st); err != nil {
		t.Fatal(err)
	}
	got := []any{st.Accepting, st.Ingest.Accepted, len(st.Peers), st.Peers[0].Name, st.Peers[0].Accepted, st.Peers[0].SkippedGroups}
	if diff := cmp.Diff([]any{true, int64(4), 1, "p", int64(3), int64(1)}, got); diff != "" {
		t.Errorf("status.json (-want +got):\n%s", diff)
	}
	page := get("/status")
	for _, want := range []string{"<h1>newsfeed relay.test</h1>", `<td class="l">p</td><td>3</td><td>3</td>`, "Accepting articles.",
		// Every column of offered's sum.
		"<th>dropped</th><th>missing</th><th>too old</th><th>lost</th><th>queued</th>"} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q:\n%s", want, page)
		}
	}
}
