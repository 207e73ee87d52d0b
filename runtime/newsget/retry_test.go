package newsget

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// srvSpec is one test server of a selection or retry case.
type srvSpec struct {
	name  string
	cfg   func(*ServerConfig)         // changes to the server's configuration
	opts  nntptest.Options            // the test server's options
	lacks []int                       // parts it does not have (430)
	body  func(n, attempt int) []byte // replaces the response to BODY of part n (attempt from 1); nil answers normally
	fault []nntptest.Fault
}

// retryCase is one end-to-end case: servers, a posting of 4 parts of
// 3000 bytes, and what must happen.
type retryCase struct {
	name     string
	servers  []srvSpec
	date     time.Time // NZB date; zero leaves it out
	retries  int       // article_retries; 0 = default
	timeout  time.Duration
	want     []string         // results()
	bodies   map[string][]int // server name(s joined by "+") -> BODY count per part
	retry    map[string]int   // Summary.Retries
	blocks   int              // Scheduler blocks
	anyRetry bool             // do not check retries
}

// one is the usual single-connection, no-pipelining tweak that makes the
// order of requests deterministic.
func one(c *ServerConfig) { c.Connections, c.Pipeline = 1, 1 }

// level returns a config tweak for level l (single connection).
func level(l int) func(*ServerConfig) {
	return func(c *ServerConfig) { one(c); c.Level = l }
}

// badCRC is part n's body with a wrong pcrc32.
func badCRC(p poster.Posting, n int) []byte {
	b := p.WireBody(n)
	i := bytes.Index(b, []byte("pcrc32="))
	out := append([]byte(nil), b...)
	if out[i+7] == '0' {
		out[i+7] = '1'
	} else {
		out[i+7] = '0'
	}
	return out
}

func TestRetryTable(t *testing.T) {
	p := newPosting("r.bin", 7, 12000, 3000)
	cases := []retryCase{
		{name: "all found on the first server",
			servers: []srvSpec{{name: "s1", cfg: one}},
			want:    []string{"r.bin complete"}, bodies: map[string][]int{"s1": {1, 1, 1, 1}}},
		{name: "connection cut mid-body: same server again",
			servers: []srvSpec{{name: "s1", cfg: one, fault: []nntptest.Fault{{Cmd: "BODY", Nth: 2, CloseAfter: 500}}}},
			want:    []string{"r.bin complete"}, bodies: map[string][]int{"s1": {1, 2, 1, 1}},
			retry: map[string]int{"connection error": 1}},
		{name: "connection errors use up article_retries: next server",
			retries: 1,
			servers: []srvSpec{
				{name: "s1", cfg: level(0), fault: []nntptest.Fault{{Cmd: "BODY", Nth: 2, CloseAfter: 500}, {Cmd: "BODY", Nth: 3, CloseAfter: 500}}},
				{name: "s2", cfg: level(1)}},
			want:   []string{"r.bin complete"},
			bodies: map[string][]int{"s1": {1, 2, 1, 1}, "s2": {0, 1, 0, 0}},
			// retries count requests that repeat a failed one: s1's
			// second try and s2's
			retry: map[string]int{"connection error": 2}},
		{name: "430: next level",
			servers: []srvSpec{{name: "s1", cfg: level(0), lacks: []int{3}}, {name: "s2", cfg: level(1)}},
			want:    []string{"r.bin complete"}, bodies: map[string][]int{"s1": {1, 1, 1, 1}, "s2": {0, 0, 1, 0}},
			retry: map[string]int{"missing": 1}},
		{name: "430 from a group member fails its group: next level",
			servers: []srvSpec{
				{name: "s1", cfg: func(c *ServerConfig) { c.Group = 1 }, lacks: []int{3}},
				{name: "s2", cfg: func(c *ServerConfig) { c.Group = 1 }, lacks: []int{3}},
				{name: "s3", cfg: level(1)}},
			want:   []string{"r.bin complete"},
			bodies: map[string][]int{"s1+s2": {1, 1, 1, 1}, "s3": {0, 0, 1, 0}},
			retry:  map[string]int{"missing": 1}},
		{name: "430 everywhere: missing with its byte range",
			servers: []srvSpec{{name: "s1", cfg: level(0), lacks: []int{4}}, {name: "s2", cfg: level(1), lacks: []int{4}}},
			want:    []string{"r.bin.part incomplete: missing segment 4 bytes 9000-11999 (3000 bytes)"},
			bodies:  map[string][]int{"s1": {1, 1, 1, 1}, "s2": {0, 0, 0, 1}},
			retry:   map[string]int{"missing": 1}},
		{name: "430 everywhere for the first part: its range is known at the end",
			servers: []srvSpec{{name: "s1", cfg: one, lacks: []int{1}}},
			want:    []string{"r.bin.part incomplete: missing segment 1 bytes 0-2999 (3000 bytes)"},
			bodies:  map[string][]int{"s1": {1, 1, 1, 1}}},
		{name: "CRC mismatch: once more on the same server, then next",
			servers: []srvSpec{
				{name: "s1", cfg: level(0), body: func(n, _ int) []byte {
					if n == 2 {
						return badCRC(p, 2)
					}
					return nil
				}},
				{name: "s2", cfg: level(1)}},
			want:   []string{"r.bin complete"},
			bodies: map[string][]int{"s1": {1, 2, 1, 1}, "s2": {0, 1, 0, 0}},
			retry:  map[string]int{"corrupt": 2}},
		{name: "garbage instead of yEnc: corrupt, the retry gets a good copy",
			servers: []srvSpec{{name: "s1", cfg: one, body: func(n, attempt int) []byte {
				if n == 2 && attempt == 1 {
					return []byte("this is not\r\n=ybegin at all\r\n\x00\xff garbage\r\n.\r\n")
				}
				return nil
			}}},
			want:   []string{"r.bin complete"},
			bodies: map[string][]int{"s1": {1, 2, 1, 1}},
			retry:  map[string]int{"corrupt": 1}},
		{name: "yEnc lying about its offset: refused, never written over other parts",
			servers: []srvSpec{{name: "s1", cfg: one, body: func(n, attempt int) []byte {
				if n == 3 && attempt == 1 {
					// part 3 claims to be bytes 1-3000 with part 1's data
					b := p.WireBody(1)
					return bytes.Replace(b, []byte("part=1 "), []byte("part=3 "), 1)
				}
				return nil
			}}},
			want:   []string{"r.bin complete"},
			bodies: map[string][]int{"s1": {1, 1, 2, 1}},
			retry:  map[string]int{"corrupt": 1}},
		{name: "502 to BODY blocks the server with backoff, then it serves",
			servers: []srvSpec{{name: "s1", cfg: one, fault: []nntptest.Fault{{Cmd: "BODY", Code: 502, Text: "access denied", Times: 2}}}},
			want:    []string{"r.bin complete"},
			bodies:  map[string][]int{"s1": {3, 1, 1, 1}},
			retry:   map[string]int{"auth error": 2}, blocks: 2},
		{name: "502 to BODY: the other server of the level takes over",
			servers: []srvSpec{
				{name: "s1", cfg: one, fault: []nntptest.Fault{{Cmd: "BODY", Code: 502, Text: "access denied"}}},
				{name: "s2"}},
			// how often s1 is tried again after its blocks end depends on
			// timing; every part must come from s2
			want: []string{"r.bin complete"}, anyRetry: true,
			bodies: map[string][]int{"s2": {1, 1, 1, 1}}},
		{name: "credentials rejected at login: server given up, next level serves",
			servers: []srvSpec{
				{name: "s1", cfg: func(c *ServerConfig) { level(0)(c); c.Username, c.Password = "u", "wrong" },
					opts: nntptest.Options{Auth: &nntptest.Auth{User: "u", Pass: "right", Required: true}}},
				{name: "s2", cfg: level(1)}},
			want:   []string{"r.bin complete"},
			bodies: map[string][]int{"s1": {0, 0, 0, 0}, "s2": {1, 1, 1, 1}}},
		{name: "credentials accepted",
			servers: []srvSpec{{name: "s1", cfg: func(c *ServerConfig) { one(c); c.Username, c.Password = "u", "right" },
				opts: nntptest.Options{Auth: &nntptest.Auth{User: "u", Pass: "right", Required: true}}}},
			want:   []string{"r.bin complete"},
			bodies: map[string][]int{"s1": {1, 1, 1, 1}}},
		{name: "retention: an old article is never asked of a short-retention server",
			date: time.Now().Add(-100 * 24 * time.Hour),
			servers: []srvSpec{
				{name: "s1", cfg: func(c *ServerConfig) { level(0)(c); c.Retention = 30 }},
				{name: "s2", cfg: func(c *ServerConfig) { level(1)(c); c.Retention = 3000 }}},
			want:   []string{"r.bin complete"},
			bodies: map[string][]int{"s1": {0, 0, 0, 0}, "s2": {1, 1, 1, 1}}},
		{name: "a blocked optional server counts as failed: next level",
			servers: []srvSpec{
				{name: "s1", cfg: func(c *ServerConfig) { level(0)(c); c.Optional = true },
					fault: []nntptest.Fault{{Cmd: nntptest.Greeting, Code: 400, Text: "go away", Close: true}}},
				{name: "s2", cfg: level(1)}},
			want:   []string{"r.bin complete"},
			bodies: map[string][]int{"s1": {0, 0, 0, 0}, "s2": {1, 1, 1, 1}}},
		{name: "a server that stalls mid-body times out: same server again",
			timeout: time.Second,
			servers: []srvSpec{{name: "s1", cfg: one, body: func(n, attempt int) []byte {
				if n == 2 && attempt == 1 {
					b := p.WireBody(2)
					return b[:len(b)/2] // and then silence
				}
				return nil
			}}},
			want:   []string{"r.bin complete"},
			bodies: map[string][]int{"s1": {1, 2, 1, 1}},
			retry:  map[string]int{"connection error": 1}},
		{name: "inactive server is never used",
			servers: []srvSpec{
				{name: "s1", cfg: func(c *ServerConfig) { one(c); off := false; c.Active = &off }},
				{name: "s2", cfg: level(1)}},
			want:   []string{"r.bin complete"},
			bodies: map[string][]int{"s1": {0, 0, 0, 0}, "s2": {1, 1, 1, 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := p
			if !tc.date.IsZero() {
				p.Date = tc.date.Unix()
			}
			srvs := map[string]*nntptest.Server{}
			var cfgs []ServerConfig
			for _, sp := range tc.servers {
				s := nntptest.Start(t, sp.opts)
				lacks := map[int]bool{}
				for _, n := range sp.lacks {
					lacks[n] = true
				}
				serve(t, s, func(_ poster.Posting, n int) bool { return lacks[n] }, p)
				if sp.body != nil {
					s.SetHandler("BODY", bodyHandler(p, lacks, sp.body))
				}
				for _, f := range sp.fault {
					s.AddFault(f)
				}
				srvs[sp.name] = s
				c := server(s, sp.name)
				if sp.cfg != nil {
					sp.cfg(&c)
				}
				cfgs = append(cfgs, c)
			}
			r := newRun(t, cfgs...)
			r.cfg.ArticleRetries = tc.retries
			if tc.timeout > 0 {
				r.cfg.ArticleTimeout = tomlconf.Duration(tc.timeout)
			}
			sum := r.run(t, poster.NZB(p))
			got := results(sum)
			for i := range got {
				if len(tc.want) == len(got) && strings.HasSuffix(tc.want[i], ": ") {
					got[i] = got[i][:min(len(got[i]), len(tc.want[i]))] // prefix match
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if tc.want[0] == "r.bin complete" {
				if diff := cmp.Diff(map[string]string{"r.bin": digest(p.Data)}, r.outputs(t)); diff != "" {
					t.Errorf("files (-want +got):\n%s", diff)
				}
			}
			for names, want := range tc.bodies {
				got := make([]int, p.Parts())
				for _, name := range strings.Split(names, "+") {
					counts := bodyCounts(srvs[name])
					for n := 1; n <= p.Parts(); n++ {
						got[n-1] += counts[p.MessageID(n)]
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("BODY per part on %s (-want +got):\n%s", names, diff)
				}
			}
			if tc.retry == nil {
				tc.retry = map[string]int{}
			}
			if diff := cmp.Diff(tc.retry, sum.Retries); diff != "" && !tc.anyRetry {
				t.Errorf("retries (-want +got):\n%s", diff)
			}
			if tc.blocks > 0 && sum.Stats.Blocks != tc.blocks {
				t.Errorf("blocks: %d, want %d", sum.Stats.Blocks, tc.blocks)
			}
		})
	}
}

// bodyHandler answers BODY for the posting's parts: 430 for lacking ones,
// custom(n, attempt) when it returns bytes (the whole response after the
// status line), the real body otherwise.
func bodyHandler(p poster.Posting, lacks map[int]bool, custom func(n, attempt int) []byte) nntptest.Handler {
	var mu sync.Mutex
	attempts := map[int]int{}
	return func(conn int, cmd proto.Command) []byte {
		id := ""
		if len(cmd.Args) > 0 {
			id = cmd.Args[0]
		}
		n := 0
		for k := 1; k <= p.Parts(); k++ {
			if p.MessageID(k) == id {
				n = k
			}
		}
		if n == 0 || lacks[n] {
			return proto.AppendResponse(nil, 430, "no such article")
		}
		mu.Lock()
		attempts[n]++
		a := attempts[n]
		mu.Unlock()
		resp := proto.AppendResponse(nil, 222, fmt.Sprintf("0 %s", id))
		if b := custom(n, a); b != nil {
			return append(resp, b...)
		}
		return append(resp, p.WireBody(n)...)
	}
}
