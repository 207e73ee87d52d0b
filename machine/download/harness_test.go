package download

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// epoch is the clock at the start of every scheduler script.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// srv builds a Server from a compact spec: "level=1 group=2 conns=3 pipe=1
// ret=30 opt off join" (off: not Active). Defaults: level 0, group 0, 1
// connection, pipeline 2 (the default), active.
func srv(t testing.TB, id int, spec string) Server {
	s := Server{ID: id, Name: "s" + strconv.Itoa(id), Active: true, Connections: 1}
	for _, w := range strings.Fields(spec) {
		k, v, _ := strings.Cut(w, "=")
		n, _ := strconv.Atoi(v)
		switch k {
		case "level":
			s.Level = n
		case "group":
			s.Group = n
		case "conns":
			s.Connections = n
		case "pipe":
			s.Pipeline = n
		case "ret":
			s.Retention = n
		case "opt":
			s.Optional = true
		case "off":
			s.Active = false
		case "join":
			s.JoinGroup = true
		default:
			t.Fatalf("srv spec %q: unknown word %q", spec, w)
		}
	}
	return s
}

// sched is a Scheduler under test with its clock.
type sched struct {
	t   testing.TB
	s   *Scheduler
	now time.Time
}

func newSched(t testing.TB, cfg Config, servers ...Server) *sched {
	t.Helper()
	s, err := NewScheduler(cfg, servers)
	if err != nil {
		t.Fatal(err)
	}
	return &sched{t: t, s: s, now: epoch}
}

// events drains the Scheduler's events as strings.
func (h *sched) events() []string {
	var out []string
	for {
		e, ok := h.s.NextEvent()
		if !ok {
			return out
		}
		out = append(out, e.(fmt.Stringer).String())
	}
}

// parseKey reads "F/N".
func parseKey(s string) (Key, error) {
	f, n, ok := strings.Cut(s, "/")
	if !ok {
		return Key{}, fmt.Errorf("key %q: want F/N", s)
	}
	a, err1 := strconv.Atoi(f)
	b, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil {
		return Key{}, fmt.Errorf("key %q: want F/N", s)
	}
	return Key{File: a, Number: b}, nil
}

func parseConn(s string) (ConnID, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "c"))
	return ConnID(n), err
}

var outcomeWords = map[string]Outcome{"ok": OK, "missing": Missing, "corrupt": Corrupt, "conn": ConnError, "auth": AuthError}
var dialWords = map[string]DialCause{"connect": DialConnect, "tls": DialTLS, "unavailable": DialUnavailable, "auth": DialAuth, "protocol": DialProtocol}

// retries formats Stats.Retries as "conn=2 missing=1" (sorted, non-zero).
func retries(m map[Outcome]int) string {
	var out []string
	for w, o := range outcomeWords {
		if m[o] > 0 {
			out = append(out, fmt.Sprintf("%s=%d", w, m[o]))
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// run executes a script. Each line is an input, an expectation about the
// events that input produced ("> event", all of them, in order), or a check
// ("? ..."). An input followed by no "> " line must produce no events.
//
//	add 1/1 1/2 [age=40d] [group=a.b]  Add segments in one call (message-id <1.1@t>)
//	up c1 | dialfail c1 auth          answer a Dial
//	report c1 1/1 missing             Report an outcome (ok missing corrupt conn auth)
//	closed c1 conn                    Closed with an outcome
//	advance 10s                       move the clock (no Timeout)
//	timeout                           Timeout(now)
//	active 2 off | pause on
//	? seg 1/1 waiting want=2 attempts=3
//	? retries conn=2 missing=1
//	? deadline 00:00:10 | ? deadline none
func (h *sched) run(script string) {
	h.t.Helper()
	var got []string
	var want []string
	cmd := ""
	check := func() {
		h.t.Helper()
		if cmd == "" {
			return
		}
		if diff := cmp.Diff(want, got); diff != "" {
			h.t.Fatalf("after %q: events differ (-want +got):\n%s", cmd, diff)
		}
		want, got = nil, nil
	}
	for ln, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if e, ok := strings.CutPrefix(line, "> "); ok {
			want = append(want, e)
			continue
		}
		check()
		f := strings.Fields(line)
		fail := func(err error) {
			h.t.Helper()
			if err != nil {
				h.t.Fatalf("script line %d %q: %v", ln+1, line, err)
			}
		}
		cmd = line
		switch f[0] {
		case "add":
			var segs []Segment
			for _, w := range f[1:] {
				if strings.Contains(w, "/") {
					k, err := parseKey(w)
					fail(err)
					segs = append(segs, Segment{Key: k, MessageID: fmt.Sprintf("<%d.%d@t>", k.File, k.Number), Bytes: 1000})
					continue
				}
				a, v, _ := strings.Cut(w, "=")
				for i := range segs {
					switch a {
					case "age":
						d, err := strconv.Atoi(strings.TrimSuffix(v, "d"))
						fail(err)
						segs[i].Posted = h.now.Add(-time.Duration(d) * 24 * time.Hour)
					case "group":
						segs[i].Groups = []string{v}
					default:
						fail(fmt.Errorf("unknown attribute %q", w))
					}
				}
			}
			fail(h.s.Add(h.now, segs...))
		case "up":
			c, err := parseConn(f[1])
			fail(err)
			fail(h.s.Connected(h.now, c))
		case "dialfail":
			c, err := parseConn(f[1])
			fail(err)
			fail(h.s.DialFailed(h.now, c, dialWords[f[2]]))
		case "report":
			c, err := parseConn(f[1])
			fail(err)
			k, err := parseKey(f[2])
			fail(err)
			o, ok := outcomeWords[f[3]]
			if !ok {
				fail(fmt.Errorf("unknown outcome"))
			}
			fail(h.s.Report(h.now, c, k, o))
		case "closed":
			c, err := parseConn(f[1])
			fail(err)
			fail(h.s.Closed(h.now, c, outcomeWords[f[2]]))
		case "advance":
			d, err := time.ParseDuration(f[1])
			fail(err)
			h.now = h.now.Add(d)
		case "timeout":
			h.s.Timeout(h.now)
		case "active":
			id, err := strconv.Atoi(f[1])
			fail(err)
			fail(h.s.SetActive(h.now, id, f[2] == "on"))
		case "pause":
			h.s.Pause(h.now, f[1] == "on")
		case "?":
			h.query(f[1:], fail)
			cmd = ""
			continue
		default:
			fail(fmt.Errorf("unknown command"))
		}
		got = h.events()
	}
	check()
}

func (h *sched) query(f []string, fail func(error)) {
	h.t.Helper()
	var got, want string
	switch f[0] {
	case "seg":
		k, err := parseKey(f[1])
		fail(err)
		in, ok := h.s.Segment(k)
		if !ok {
			fail(fmt.Errorf("no segment %s", k))
		}
		got = strings.ReplaceAll(in.State, " ", "-")
		if in.Want >= 0 {
			got += fmt.Sprintf(" want=%d", in.Want)
		}
		got += fmt.Sprintf(" attempts=%d", in.Attempts)
		want = strings.Join(f[2:], " ")
	case "retries":
		got, want = retries(h.s.Stats().Retries), strings.Join(f[1:], " ")
	case "deadline":
		got = "none"
		if d, ok := h.s.Deadline(); ok {
			got = d.Format("15:04:05")
		}
		want = f[1]
	default:
		fail(fmt.Errorf("unknown query"))
	}
	if got != want {
		h.t.Fatalf("? %s: got %q, want %q", strings.Join(f, " "), got, want)
	}
}
