package newsfeed

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// arts makes n test articles named <prefix-i@t>.
func arts(prefix string, n int) map[string][]byte {
	m := map[string][]byte{}
	for i := range n {
		id := fmt.Sprintf("<%s-%d@t>", prefix, i)
		m[id] = testArticle(id, "misc.test", "up.example!not-for-mail", 3)
	}
	return m
}

// feedAll offers articles over one ingest connection and fails unless
// every one is accepted (239).
func (h *relayHarness) feedAll(a map[string][]byte) {
	h.t.Helper()
	codes := dialIngest(h.t, h.r.Addr().String()).takethis(a)
	for id := range a {
		if codes[id] != "239" {
			h.t.Fatalf("TAKETHIS %s: %q, want 239 (all: %v)", id, codes[id], codes)
		}
	}
}

func (h *relayHarness) peer(name string) PeerStats {
	h.t.Helper()
	s, ok := h.r.PeerStats(name)
	if !ok {
		h.t.Fatalf("no peer %s", name)
	}
	return s
}

// offers counts the commands a sink got that offer or send an article.
func offers(s *nntptest.Server) int { return s.Count("CHECK") + s.Count("TAKETHIS") + s.Count("IHAVE") }

// TestCtlPauseFlushResume: a paused peer is offered nothing (counted at the
// peer) while its queue takes every article; flush moves the memory queue
// to backlog; resume delivers all of them.
func TestCtlPauseFlushResume(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	h := startRelay(t, relayConfig(t, t.TempDir(), peerText("sink", s, "connections = 1")), nil)
	waitFor(t, 30*time.Second, "the peer's connection", func() bool { return h.peer("sink").ConnsUp == 1 }, nil)
	if _, err := h.r.Pause("sink"); err != nil {
		t.Fatal(err)
	}
	a := arts("p", 20)
	h.feedAll(a) // acknowledged: durable in the spool and the peer's queue
	st := h.peer("sink")
	if !st.Paused || st.Queued != 20 || st.Memory != 20 {
		t.Fatalf("paused peer after 20 articles: paused %v queued %d memory %d, want true 20 20", st.Paused, st.Queued, st.Memory)
	}
	if n := offers(s); n != 0 {
		t.Errorf("the paused peer was offered %d articles, want 0", n)
	}
	msg, err := h.r.Flush("sink")
	if err != nil {
		t.Fatal(err)
	}
	if st := h.peer("sink"); st.Memory != 0 || st.BacklogArticle != 20 || st.Queued != 20 {
		t.Errorf("after flush (%s): memory %d backlog %d queued %d, want 0 20 20", msg, st.Memory, st.BacklogArticle, st.Queued)
	}
	if n := offers(s); n != 0 {
		t.Errorf("the paused peer was offered %d articles after flush, want 0", n)
	}
	if _, err := h.r.Resume("sink"); err != nil {
		t.Fatal(err)
	}
	h.settle()
	for id := range a {
		if !s.Has(id) {
			t.Errorf("%s never reached the peer after resume", id)
		}
	}
	h.checkStats()
	if _, err := h.r.Pause("nosuch"); err == nil || err.Error() != `no such peer "nosuch" (the peers are sink)` {
		t.Errorf("Pause(nosuch) = %v, want no such peer, naming the peers", err)
	}
}

// TestCtlKick: with a reconnect backoff of minutes, a peer that comes back
// gets its article after a kick, long before the backoff would end.
func TestCtlKick(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	down := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Drop: true})
	text := fmt.Sprintf("[[peer]]\nname = \"sink\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 1\nreconnect_max = \"10m\"\n", s.Port())
	h := startRelay(t, relayConfig(t, t.TempDir(), text), func(o *Options) { o.BackoffBase = 10 * time.Minute })
	waitFor(t, 30*time.Second, "the connection to fail and wait", func() bool {
		c := h.peer("sink").Connections
		return len(c) == 1 && c[0].State == "waiting"
	}, nil)
	a := arts("k", 1)
	h.feedAll(a)
	s.RemoveFault(down) // the peer is back; the relay waits 7.5 to 12.5 minutes
	kicked := time.Now()
	msg, err := h.r.Kick("sink")
	if err != nil || !strings.Contains(msg, "1 connection(s) were waiting") {
		t.Fatalf("Kick = %q, %v", msg, err)
	}
	// The bound is far below the backoff (at least 7.5 minutes): only a
	// kick explains delivery within it.
	waitFor(t, time.Minute, "the article after the kick", func() bool { return s.Has("<k-0@t>") }, h.r.StatsLines)
	if d := time.Since(kicked); d >= 7*time.Minute {
		t.Errorf("delivered %v after the kick: the backoff, not the kick", d)
	}
}

// TestReload adds a peer under load: nothing is lost, the running peer's
// connections stay up, the new peer gets what is routed after the reload;
// then a configuration with a mistake is refused whole.
func TestReload(t *testing.T) {
	a := nntptest.Start(t, nntptest.Options{Hostname: "a"})
	b := nntptest.Start(t, nntptest.Options{Hostname: "b"})
	dir := t.TempDir()
	file := filepath.Join(dir, "newsfeed.toml")
	head := fmt.Sprintf("listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"relay.test\"\nstats_interval = \"1h\"\n", filepath.Join(dir, "spool"))
	write := func(text string) {
		if err := os.WriteFile(file, []byte(head+text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(peerText("a", a, "connections = 2"))
	cfg, err := LoadConfig(file)
	if err != nil {
		t.Fatal(err)
	}
	h := startRelay(t, cfg, nil)
	waitFor(t, 30*time.Second, "a's connections", func() bool { return h.peer("a").ConnsUp == 2 }, nil)
	modeStreams := a.Count("MODE STREAM")

	// Load: batches of articles on their own connection while the
	// configuration changes.
	done := make(chan struct{})
	fed := make(chan map[string][]byte, 100)
	go func() {
		defer close(fed)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			batch := arts(fmt.Sprintf("load%d", i), 10)
			h.feedAll(batch)
			fed <- batch
		}
	}()
	for len(fed) < 3 {
		time.Sleep(time.Millisecond)
	}
	write(peerText("a", a, "connections = 2") + peerText("b", b, "connections = 1"))
	res, err := h.r.ReloadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ReloadResult{Added: []string{"b"}, Unchanged: []string{"a"}, ConfigFile: file}, res); diff != "" {
		t.Errorf("reload result (-want +got):\n%s", diff)
	}
	after := arts("after", 10)
	h.feedAll(after)
	close(done)
	var all []string
	for batch := range fed {
		for id := range batch {
			all = append(all, id)
		}
	}
	h.settle()
	for _, id := range all {
		if !a.Has(id) {
			t.Errorf("%s lost: a never got it", id)
		}
	}
	for id := range after {
		if !a.Has(id) || !b.Has(id) {
			t.Errorf("%s, fed after the reload: a has it %v, b has it %v; want both", id, a.Has(id), b.Has(id))
		}
	}
	if n := a.Count("MODE STREAM"); n != modeStreams {
		t.Errorf("a's connections were dropped: MODE STREAM %d times, %d before the reload", n, modeStreams)
	}
	h.checkStats()

	// A mistake: refused whole, with FILE:LINE; b stays.
	write(peerText("a", a, "connections = 2") + "[[peer]]\nname = \"c\"\nport = 70000\n")
	if _, err := h.r.ReloadConfig(); err == nil || !strings.Contains(err.Error(), file+":") {
		t.Errorf("reload of a bad file: %v, want an error naming %s:LINE", err, file)
	}
	if _, ok := h.r.PeerStats("b"); !ok {
		t.Error("b gone after a refused reload")
	}

	// Remove b, change a's groups: a keeps its connections.
	write(peerText("a", a, "connections = 2\ngroups = [\"comp.*\"]"))
	res, err = h.r.ReloadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ReloadResult{Removed: []string{"b"}, Rerouted: []string{"a"}, ConfigFile: file}, res); diff != "" {
		t.Errorf("second reload (-want +got):\n%s", diff)
	}
	h.feedAll(arts("misc", 3)) // misc.test: a no longer wants them
	if n := a.Count("MODE STREAM"); n != modeStreams {
		t.Errorf("a's connections were dropped by a change of groups: MODE STREAM %d times, %d before", n, modeStreams)
	}
	if st := h.peer("a"); st.SkippedGroups != 3 {
		t.Errorf("a skipped %d articles for its groups, want 3", st.SkippedGroups)
	}
}

// TestCtlHTTP drives the control endpoints as `newsfeed ctl` does: the
// token file is made with mode 0600, a request without it is refused, and
// the verbs answer.
func TestCtlHTTP(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	dir := t.TempDir()
	h := startRelay(t, relayConfig(t, dir, "admin = \"127.0.0.1:0\"\narticle_log = \"news\"\n"+peerText("sink", s, "connections = 1")), nil)
	var tok string
	waitFor(t, 30*time.Second, "the control token", func() bool {
		var err error
		tok, err = ReadCtlToken(dir)
		return err == nil && h.r.AdminAddr() != nil
	}, nil)
	fi, err := os.Stat(CtlTokenFile(dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	base := "http://" + h.r.AdminAddr().String()
	do := func(method, path, token string) int {
		req, _ := http.NewRequest(method, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"POST", "/ctl/pause?peer=sink", "", http.StatusUnauthorized},
		{"POST", "/ctl/pause?peer=sink", strings.Repeat("0", len(tok)), http.StatusUnauthorized},
		{"POST", "/ctl/pause?peer=sink", tok, http.StatusOK},
		{"POST", "/ctl/pause?peer=nosuch", tok, http.StatusNotFound},
		{"GET", "/ctl/pause?peer=sink", tok, http.StatusNotFound}, // verbs are POST only
		{"POST", "/ctl/resume?peer=sink", tok, http.StatusOK},
		{"POST", "/ctl/kick?peer=sink", tok, http.StatusOK},
		{"POST", "/ctl/flush?peer=sink", tok, http.StatusOK},
		{"GET", "/ctl/trace?id=<x@y>", tok, http.StatusOK},
		{"GET", "/status.json", "", http.StatusOK},
	} {
		if got := do(c.method, c.path, c.token); got != c.want {
			t.Errorf("%s %s (token %v): %d, want %d", c.method, c.path, c.token != "", got, c.want)
		}
	}
}

// TestArrivalBeforeAnswer: an article is counted and in the article log
// before its feeder is told 239, so a status or trace asked on the 239
// finds it. While the log is held (its lock taken) the 239 does not come.
func TestArrivalBeforeAnswer(t *testing.T) {
	sink := nntptest.Start(t, nntptest.Options{})
	h := startRelay(t, relayConfig(t, t.TempDir(), "article_log = \"news\"\n"+peerText("sink", sink, "")), nil)
	c, br, g := rawDial(t, h.r.Addr().String())
	if !strings.HasPrefix(g, "200") {
		t.Fatalf("greeting %q", g)
	}
	const id = "<answered@t>"
	h.r.alog.mu.Lock()
	held := true
	defer func() {
		if held {
			h.r.alog.mu.Unlock()
		}
	}()
	fmt.Fprintf(c, "TAKETHIS %s\r\n%s", id, proto.ToWire(testArticle(id, "misc.test", "up!not-for-mail", 2)))
	// Not a timing assertion: a relay that logs first cannot answer at
	// all while the log is held; the deadline only ends the look.
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if l, err := br.ReadString('\n'); err == nil {
		t.Fatalf("answered %q before the arrival was logged", strings.TrimSpace(l))
	}
	h.r.alog.mu.Unlock()
	held = false
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if l, err := br.ReadString('\n'); !strings.HasPrefix(l, "239 ") {
		t.Fatalf("answer %q, %v; want 239", l, err)
	}
	if n := h.r.Status().Ingest.Accepted; n != 1 {
		t.Errorf("on the 239, status counts %d accepted, want 1", n)
	}
	tr, err := h.r.Trace(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) != 1 || tr.Events[0].Verdict != "accepted" {
		t.Errorf("on the 239, trace has events %+v, want its arrival", tr.Events)
	}
}

// TestTrace: trace agrees with what the peers saw: accepted (239) at the
// peer that has the article, refused (438) at one that had it already, and
// waiting in memory, then in a backlog file, at a paused one.
func TestTrace(t *testing.T) {
	got := nntptest.Start(t, nntptest.Options{Hostname: "got"})
	had := nntptest.Start(t, nntptest.Options{Hostname: "had"})
	held := nntptest.Start(t, nntptest.Options{Hostname: "held"})
	dir := t.TempDir()
	text := "article_log = \"news\"\n" + peerText("got", got, "connections = 1") +
		peerText("had", had, "connections = 1") + peerText("held", held, "connections = 1")
	h := startRelay(t, relayConfig(t, dir, text), nil)
	waitFor(t, 30*time.Second, "the peers' connections", func() bool {
		return h.peer("got").ConnsUp+h.peer("had").ConnsUp+h.peer("held").ConnsUp == 3
	}, nil)
	h.r.Pause("held")
	const id = "<t-0@t>"
	// had has it already: it answers 438.
	dialIngest(t, had.HostPort()).takethis(map[string][]byte{id: testArticle(id, "misc.test", "elsewhere!not-for-mail", 1)})
	h.feedAll(arts("t", 1))
	waitFor(t, 30*time.Second, "got and had to answer", func() bool {
		return h.peer("got").Queued == 0 && h.peer("had").Queued == 0
	}, h.r.StatsLines)

	tr, err := h.r.Trace(id)
	if err != nil {
		t.Fatal(err)
	}
	if tr.History != "stored" || tr.Size == 0 || len(tr.Events) != 1 || tr.Events[0].Verdict != "accepted" ||
		tr.Events[0].Fields["peers"] != "got,had,held" || tr.Events[0].Fields["from"] != "127.0.0.1" {
		t.Errorf("trace arrival: %+v", tr)
	}
	answers := map[string]string{}
	for _, p := range tr.Peers {
		for _, a := range p.Answers {
			answers[p.Name] += a.Verdict + ";"
		}
		if p.Waiting != "" {
			answers[p.Name] += "waiting " + strings.Fields(p.Waiting)[0]
		}
	}
	want := map[string]string{"got": "accepted;", "had": "refused;", "held": "waiting memory"}
	if diff := cmp.Diff(want, answers); diff != "" {
		t.Errorf("trace per peer (-want +got):\n%s", diff)
	}
	// What the peers saw: got has it from us; had refused our offer.
	if tx := got.Transfers(); len(tx) != 1 || tx[0].MessageID != id || !tx[0].Accepted() {
		t.Errorf("got's transfers: %+v", tx)
	}
	if n := had.Count("CHECK"); n != 1 {
		t.Errorf("had got %d CHECKs, want 1 (ours, answered 438)", n)
	}
	if n := offers(held); n != 0 {
		t.Errorf("held was offered %d articles while paused", n)
	}
	h.r.Flush("held")
	tr, err = h.r.Trace(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tr.Peers {
		if p.Name == "held" && !strings.HasPrefix(p.Waiting, "backlog file held.B.") {
			t.Errorf("held after flush: waiting %q, want a backlog file", p.Waiting)
		}
	}
	if tr, _ := h.r.Trace("<unknown@t>"); tr.History != "unknown" || len(tr.Events) != 0 {
		t.Errorf("trace of an unknown id: %+v", tr)
	}
}
