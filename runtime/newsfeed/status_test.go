package newsfeed

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/logbuf"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestStatusErrorIsHistory: while a connection waits to reconnect its
// error is current; once it feeds again the error is shown as the last
// error, with its time, and no longer as current.
func TestStatusErrorIsHistory(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	down := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Drop: true})
	text := fmt.Sprintf("[[peer]]\nname = \"sink\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 1\nreconnect_max = \"10m\"\n", s.Port())
	h := startRelay(t, relayConfig(t, t.TempDir(), text), func(o *Options) { o.BackoffBase = 10 * time.Minute })
	waitFor(t, 30*time.Second, "the connection to fail and wait", func() bool {
		c := h.peer("sink").Connections
		return len(c) == 1 && c[0].State == "waiting"
	}, nil)
	c := h.peer("sink").Connections[0]
	if c.Error == "" || c.LastErr != c.Error || c.LastErrAt == "" {
		t.Errorf("waiting connection: error %q, last error %q at %q; want the error current, with its time", c.Error, c.LastErr, c.LastErrAt)
	}
	// The next retry is the backoff's: 10m spread by ±25%.
	if at, err := time.Parse(time.RFC3339, c.RetryAt); err != nil {
		t.Errorf("waiting connection: retry_at %q: %v", c.RetryAt, err)
	} else if d := time.Until(at); d < 5*time.Minute || d > 15*time.Minute {
		t.Errorf("waiting connection: retry at %s, in %v; want about 10m", c.RetryAt, d)
	}
	if b, _ := json.Marshal(c); !strings.Contains(string(b), `"retry_at":"`+c.RetryAt+`"`) {
		t.Errorf("status JSON of a waiting connection lacks retry_at: %s", b)
	}
	s.RemoveFault(down)
	if _, err := h.r.Kick("sink"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the connection to feed again", func() bool {
		return h.peer("sink").Connections[0].State == "feeding"
	}, nil)
	c = h.peer("sink").Connections[0]
	if c.Error != "" {
		t.Errorf("feeding connection shows error %q as current", c.Error)
	}
	if c.LastErr == "" || c.LastErrAt == "" {
		t.Errorf("feeding connection lost its last error: %q at %q", c.LastErr, c.LastErrAt)
	}
	if c.RetryAt != "" {
		t.Errorf("feeding connection has a retry time %s", c.RetryAt)
	}
}

// TestStatsLineRates: the first stats line of a run gives the octet rate
// since the start, as it gives the article rate, under a name that says
// megabytes, not megabits.
func TestStatsLineRates(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	logb := &logbuf.Buffer{}
	h := startRelay(t, relayConfig(t, t.TempDir(), peerText("sink", s, "")), func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logb, nil)) })
	big := map[string][]byte{}
	for i := range 4 {
		id := fmt.Sprintf("<big%d@t>", i)
		big[id] = testArticle(id, "misc.test", "up!x", 20000) // about 1.7 MB
	}
	h.feedAll(big)
	h.settle()
	h.r.logStats(false)
	m := regexp.MustCompile(`msg=stats peer=sink .* mbytes_per_s=([0-9.]+)`).FindStringSubmatch(logb.String())
	if m == nil {
		t.Fatalf("no stats line with mbytes_per_s:\n%s", logb.String())
	}
	if v, _ := strconv.ParseFloat(m[1], 64); v <= 0 {
		t.Errorf("the first stats line's mbytes_per_s = %s after some 7 MB accepted, want more than 0", m[1])
	}
}
