package download

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRetryTable has one script per row of the retry table (retry.go) and
// one for the dial failures: each drives a Scheduler through the row's
// rule and its limit. Scripts are read by sched.run (harness_test.go).
func TestRetryTable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		servers []string // specs for srv, ids 1, 2, ...
		script  string
	}{{
		name:    "ok: the segment is done",
		servers: []string{""},
		script: `
			add 1/1
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1
			report c1 1/1 ok
			> done 1/1 s1
			? seg 1/1 done attempts=1
			? retries
		`,
	}, {
		name:    "missing (430/423): next server of the level, then the next level, then failed",
		servers: []string{"level=0", "level=0", "level=1"},
		script: `
			add 1/1
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1
			report c1 1/1 missing
			> dial s2 c2
			up c2
			> assign 1/1 s2 c2 #2
			report c2 1/1 missing
			> dial s3 c3
			up c3
			> assign 1/1 s3 c3 #3
			report c3 1/1 missing
			> failed 1/1 s1=missing s2=missing s3=missing
			? seg 1/1 failed attempts=3
			? retries missing=2
		`,
	}, {
		name:    "missing on a grouped server fails its whole group on that level",
		servers: []string{"group=1", "group=1", "level=1 group=1"},
		script: `
			add 1/1
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1
			report c1 1/1 missing
			> dial s3 c2
			up c2
			> assign 1/1 s3 c2 #2
			report c2 1/1 missing
			> failed 1/1 s1=missing s2=missing in group s3=missing
		`,
	}, {
		name:    "corrupt: once more on the same server, then the next server",
		servers: []string{"", ""},
		script: `
			add 1/1
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1
			report c1 1/1 corrupt
			> assign 1/1 s1 c1 #2
			report c1 1/1 corrupt
			> dial s2 c2
			up c2
			> assign 1/1 s2 c2 #3
			report c2 1/1 corrupt
			> assign 1/1 s2 c2 #4
			report c2 1/1 corrupt
			> failed 1/1 s1=corrupt s2=corrupt
			? retries corrupt=3
		`,
	}, {
		name:    "connection error: the same server ArticleRetries times, then the next",
		cfg:     Config{ArticleRetries: 2},
		servers: []string{"", ""},
		script: `
			add 1/1
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1
			closed c1 conn
			> dial s1 c2
			? seg 1/1 waiting want=1 attempts=1
			up c2
			> assign 1/1 s1 c2 #2
			# an unexpected answer: the connection goes on
			report c2 1/1 conn
			> assign 1/1 s1 c2 #3
			closed c2 conn
			> dial s2 c3
			up c3
			> assign 1/1 s2 c3 #4
			report c3 1/1 ok
			> done 1/1 s2
			? retries conn=3
		`,
	}, {
		name:    "connection errors everywhere: failed as exhausted",
		cfg:     Config{ArticleRetries: -1},
		servers: []string{"", "level=1"},
		script: `
			add 1/1
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1
			report c1 1/1 conn
			> dial s2 c2
			up c2
			> assign 1/1 s2 c2 #2
			report c2 1/1 conn
			> failed 1/1 s1=retries exhausted s2=retries exhausted
		`,
	}, {
		name:    "auth error: the server is blocked, another takes the segment, which loses nothing",
		servers: []string{"", "", "level=1"},
		script: `
			add 1/1
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1
			report c1 1/1 auth
			> blocked s1 until 00:00:10 n=1 (request: auth error)
			> dial s2 c2
			up c2
			> assign 1/1 s2 c2 #2
			report c2 1/1 ok
			> done 1/1 s2
			? retries auth=1
		`,
	}, {
		name:    "auth error on the level's only server: the segment waits for the block's end, not the next level",
		servers: []string{"", "level=1"},
		script: `
			add 1/1 1/2
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1
			> assign 1/2 s1 c1 #1
			report c1 1/1 auth
			> blocked s1 until 00:00:10 n=1 (request: auth error)
			# the pipelined request fails too: the running block is not extended
			report c1 1/2 auth
			? deadline 00:00:10
			? seg 1/1 waiting attempts=1
			advance 9s
			timeout
			advance 1s
			timeout
			> unblocked s1
			> assign 1/1 s1 c1 #2
			> assign 1/2 s1 c1 #2
			report c1 1/1 auth
			> blocked s1 until 00:00:30 n=2 (request: auth error)
			report c1 1/2 ok
			> done 1/2 s1
			advance 20s
			timeout
			> unblocked s1
			> assign 1/1 s1 c1 #3
			report c1 1/1 ok
			> done 1/1 s1
			? deadline none
			add 1/3
			> assign 1/3 s1 c1 #1
			# the successes reset the doubling
			report c1 1/3 auth
			> blocked s1 until 00:00:40 n=1 (request: auth error)
		`,
	}, {
		name:    "dial failures block with a doubling backoff up to the cap",
		cfg:     Config{BackoffBase: 10 * time.Second, BackoffMax: 30 * time.Second},
		servers: []string{"", "level=1"},
		script: `
			add 1/1
			> dial s1 c1
			dialfail c1 connect
			> blocked s1 until 00:00:10 n=1 (dial: connect)
			? deadline 00:00:10
			advance 10s
			timeout
			> unblocked s1
			> dial s1 c2
			dialfail c2 auth
			> blocked s1 until 00:00:30 n=2 (dial: auth)
			advance 20s
			timeout
			> unblocked s1
			> dial s1 c3
			dialfail c3 tls
			> blocked s1 until 00:01:00 n=3 (dial: tls)
			advance 30s
			timeout
			> unblocked s1
			> dial s1 c4
			up c4
			> assign 1/1 s1 c4 #1
			report c4 1/1 ok
			> done 1/1 s1
		`,
	}, {
		name:    "a closed connection gives every request in flight the same outcome, in order",
		servers: []string{"", ""},
		script: `
			add 1/1 1/2
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1
			> assign 1/2 s1 c1 #1
			closed c1 auth
			> blocked s1 until 00:00:10 n=1 (request: auth error)
			> dial s2 c2
			up c2
			> assign 1/1 s2 c2 #2
			> assign 1/2 s2 c2 #2
			? retries auth=2
		`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var servers []Server
			for i, spec := range tc.servers {
				servers = append(servers, srv(t, i+1, spec))
			}
			newSched(t, tc.cfg, servers...).run(tc.script)
		})
	}
}

// TestSelection covers the selection algorithm: levels, busy servers,
// retention, active, optional, want-server, groups, pipelining, pause.
func TestSelection(t *testing.T) {
	for _, tc := range []struct {
		name    string
		servers []string
		script  string
	}{{
		name:    "a busy level 0 never spills over to level 1",
		servers: []string{"pipe=1", "level=1 conns=4"},
		script: `
			add 1/1
			> dial s1 c1
			add 1/2 1/3
			up c1
			> assign 1/1 s1 c1 #1
			report c1 1/1 ok
			> done 1/1 s1
			> assign 1/2 s1 c1 #1
			? seg 1/3 waiting attempts=0
		`,
	}, {
		name:    "retention: an older article skips the server without a request",
		servers: []string{"ret=30", "level=1"},
		script: `
			add 1/1 age=40d
			> dial s2 c1
			add 1/2 age=20d
			> dial s1 c2
			up c1
			> assign 1/1 s2 c1 #1
			up c2
			> assign 1/2 s1 c2 #1
			report c1 1/1 missing
			> failed 1/1 s1=beyond retention s2=missing
		`,
	}, {
		name:    "retention: beyond every server's retention fails at once",
		servers: []string{"ret=30", "level=1 ret=100"},
		script: `
			add 1/1 age=101d
			> failed 1/1 s1=beyond retention s2=beyond retention
		`,
	}, {
		name:    "retention: an article that ages past a retention while waiting moves on",
		servers: []string{"ret=30 pipe=1", "level=1"},
		script: `
			add 1/1 1/2 age=29d
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1
			advance 48h
			report c1 1/1 ok
			> done 1/1 s1
			> dial s2 c2
			up c2
			> assign 1/2 s2 c2 #1
		`,
	}, {
		name:    "an inactive server is skipped, and named in the verdict",
		servers: []string{"off", ""},
		script: `
			add 1/1
			> dial s2 c1
			up c1
			> assign 1/1 s2 c1 #1
			report c1 1/1 missing
			> failed 1/1 s1=inactive s2=missing
		`,
	}, {
		name:    "no active server: segments wait, they do not fail",
		servers: []string{"off"},
		script: `
			add 1/1
			? seg 1/1 waiting attempts=0
			active 1 on
			> dial s1 c1
		`,
	}, {
		name:    "a blocked optional server counts as failed; when it is all that is left, the segment waits for it",
		servers: []string{"opt", "level=1"},
		script: `
			add 1/1
			> dial s1 c1
			dialfail c1 connect
			> blocked s1 until 00:00:10 n=1 (dial: connect)
			> dial s2 c2
			up c2
			> assign 1/1 s2 c2 #1
			report c2 1/1 missing
			? seg 1/1 waiting attempts=1
			advance 10s
			timeout
			> unblocked s1
			> dial s1 c3
			up c3
			> assign 1/1 s1 c3 #2
			report c3 1/1 missing
			> failed 1/1 s1=missing s2=missing
		`,
	}, {
		name:    "want-server: retries wait for their server although another is idle",
		servers: []string{"pipe=2", "pipe=1"},
		script: `
			add 1/1 1/2 1/3
			> dial s1 c1
			> dial s2 c2
			up c1
			> assign 1/1 s1 c1 #1
			> assign 1/2 s1 c1 #1
			up c2
			> assign 1/3 s2 c2 #1
			closed c1 conn
			> dial s1 c3
			report c2 1/3 ok
			> done 1/3 s2
			? seg 1/1 waiting want=1 attempts=1
			add 1/4
			> assign 1/4 s2 c2 #1
			up c3
			> assign 1/1 s1 c3 #2
			> assign 1/2 s1 c3 #2
		`,
	}, {
		name:    "want-server: a blocked wanted server is given up for the others",
		servers: []string{"", ""},
		script: `
			add 1/1 1/2
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1
			> assign 1/2 s1 c1 #1
			report c1 1/1 conn
			> assign 1/1 s1 c1 #2
			report c1 1/2 auth
			> blocked s1 until 00:00:10 n=1 (request: auth error)
			> dial s2 c2
			report c1 1/1 conn
			up c2
			> assign 1/1 s2 c2 #3
			> assign 1/2 s2 c2 #2
		`,
	}, {
		name:    "a group shares the load: the least-loaded member takes the segment",
		servers: []string{"group=1 pipe=4", "group=1 pipe=4"},
		script: `
			add 1/1 1/2 1/3 1/4 1/5
			> dial s1 c1
			> dial s2 c2
			up c1
			> assign 1/1 s1 c1 #1
			> assign 1/2 s1 c1 #1
			> assign 1/3 s1 c1 #1
			> assign 1/4 s1 c1 #1
			up c2
			> assign 1/5 s2 c2 #1
			report c1 1/1 ok
			> done 1/1 s1
			add 1/6
			> assign 1/6 s2 c2 #1
			add 1/7
			> assign 1/7 s2 c2 #1
			add 1/8
			> assign 1/8 s1 c1 #1
		`,
	}, {
		name:    "ungrouped servers of a level: the first with room takes it",
		servers: []string{"pipe=4", "pipe=4"},
		script: `
			add 1/1 1/2 1/3 1/4 1/5
			> dial s1 c1
			> dial s2 c2
			up c1
			> assign 1/1 s1 c1 #1
			> assign 1/2 s1 c1 #1
			> assign 1/3 s1 c1 #1
			> assign 1/4 s1 c1 #1
			up c2
			> assign 1/5 s2 c2 #1
			report c1 1/1 ok
			> done 1/1 s1
			add 1/6
			> assign 1/6 s1 c1 #1
		`,
	}, {
		name:    "pipelining: requests go to the connection with the fewest in flight",
		servers: []string{"conns=2"},
		script: `
			add 1/1 1/2 1/3 1/4
			> dial s1 c1
			> dial s1 c2
			up c1
			> assign 1/1 s1 c1 #1
			> assign 1/2 s1 c1 #1
			up c2
			> assign 1/3 s1 c2 #1
			> assign 1/4 s1 c2 #1
			report c1 1/1 ok
			> done 1/1 s1
			report c2 1/3 ok
			> done 1/3 s1
			report c2 1/4 ok
			> done 1/4 s1
			add 1/5 1/6 1/7
			> assign 1/5 s1 c2 #1
			> assign 1/6 s1 c1 #1
			> assign 1/7 s1 c2 #1
		`,
	}, {
		name:    "join_group: the assignment names the segment's first group",
		servers: []string{"join"},
		script: `
			add 1/1 group=alt.binaries.test
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1 group=alt.binaries.test
		`,
	}, {
		name:    "pause holds assignments and dials",
		servers: []string{""},
		script: `
			pause on
			add 1/1
			pause off
			> dial s1 c1
			up c1
			> assign 1/1 s1 c1 #1
		`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var servers []Server
			for i, spec := range tc.servers {
				servers = append(servers, srv(t, i+1, spec))
			}
			newSched(t, Config{}, servers...).run(tc.script)
		})
	}
}

// TestBackoff checks the doubling and the cap of server blocks.
func TestBackoff(t *testing.T) {
	c := Config{BackoffBase: 10 * time.Second, BackoffMax: time.Minute}.withDefaults()
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, c.backoff(n))
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute, time.Minute}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
	d := Config{}.withDefaults()
	if d.BackoffBase != DefaultBackoffBase || d.BackoffMax != DefaultBackoffMax || d.ArticleRetries != DefaultArticleRetries {
		t.Errorf("defaults: %+v", d)
	}
}

// TestSchedulerErrors checks that the owner's mistakes are refused.
func TestSchedulerErrors(t *testing.T) {
	if _, err := NewScheduler(Config{}, []Server{{ID: 1}, {ID: 1}}); err == nil {
		t.Error("duplicate server ids accepted")
	}
	if _, err := NewScheduler(Config{}, make([]Server, MaxServers+1)); err == nil {
		t.Error("too many servers accepted")
	}
	h := newSched(t, Config{}, srv(t, 1, ""))
	seg := Segment{Key: Key{1, 1}, MessageID: "<a@b>"}
	if err := h.s.Add(h.now, seg, seg); err == nil {
		t.Error("duplicate segment in one Add accepted")
	}
	if err := h.s.Add(h.now, seg); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Add(h.now, seg); err == nil {
		t.Error("segment added twice")
	}
	// A refused Add leaves nothing behind, even the segments before the
	// repeated key.
	seg2 := Segment{Key: Key{2, 1}, MessageID: "<c@d>"}
	if err := h.s.Add(h.now, seg2, seg); err == nil {
		t.Error("segment added twice after a new one")
	}
	if _, ok := h.s.Segment(seg2.Key); ok || h.s.Stats().Segments != 1 {
		t.Errorf("a refused Add left %s behind (%d segments)", seg2.Key, h.s.Stats().Segments)
	}
	if err := h.s.Add(h.now, seg2); err != nil {
		t.Errorf("Add after a refused one: %v", err)
	}
	for name, err := range map[string]error{
		"Connected unknown":      h.s.Connected(h.now, 99),
		"DialFailed unknown":     h.s.DialFailed(h.now, 99, DialConnect),
		"Report on dialing conn": h.s.Report(h.now, 1, Key{1, 1}, OK),
		"Closed on dialing conn": h.s.Closed(h.now, 1, ConnError),
		"SetActive unknown":      h.s.SetActive(h.now, 99, true),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := h.s.Connected(h.now, 1); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Report(h.now, 1, Key{1, 2}, OK); err == nil {
		t.Error("Report of a segment not in flight accepted")
	}
	if err := h.s.Closed(h.now, 1, OK); err == nil {
		t.Error("Closed with outcome OK accepted")
	}
}
