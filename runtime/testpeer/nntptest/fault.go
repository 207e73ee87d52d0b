package nntptest

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Greeting is the Fault.Cmd that matches the greeting a connection gets on
// accept instead of a command.
const Greeting = "GREETING"

// A Fault changes how the server answers the commands it matches. The match
// fields select commands; the action fields say what happens. Several actions
// combine: Delay, then the response (the real one, or Code/Text and Garbage in
// its place), cut by CloseAfter, paced by Rate, then Close.
//
// When a fault replaces the response (Code, Garbage, Hang or Drop), the
// command has no effect: GROUP selects nothing, a TAKETHIS article is read
// (so the stream stays in step) but not accepted, IHAVE and POST get no
// article. Faults on IHAVE and POST apply to their first response (335, 340).
type Fault struct {
	// Cmd is the command it matches: a verb ("BODY", "LIST"), a full name
	// ("MODE STREAM", "LIST ACTIVE", see proto.Command.Name), Greeting, or ""
	// for every command (not the greeting).
	Cmd string
	// Conn restricts it to one connection, numbered from 1 in accept order;
	// 0 matches every connection.
	Conn int
	// Nth fires it only on the Nth matching command (from 1), counted over
	// the connections it matches; 0 fires it on every match (see Times).
	Nth int
	// Times, when Nth is 0, stops it after it fired that many times; 0 means
	// no limit.
	Times int

	// Delay waits this long before responding (responses already due on the
	// connection are flushed first).
	Delay time.Duration
	// Code, if non-zero, answers this status line (with Text) instead of
	// the real response.
	Code int
	Text string
	// Garbage is sent verbatim instead of the real response, after the Code
	// line if there is one.
	Garbage string
	// Hang sends nothing and reads nothing more: the connection stays open
	// and silent until the client or Close closes it.
	Hang bool
	// Drop closes the connection without sending anything.
	Drop bool
	// CloseAfter, if positive, sends only that many bytes of the response,
	// counted from the first byte of its status line, then closes.
	CloseAfter int
	// Close closes the connection after the response.
	Close bool
	// Rate, if positive, sends the response at about that many bytes per
	// second (a slow server).
	Rate int
}

// replaces reports whether f answers in place of the command.
func (f *Fault) replaces() bool {
	return f.Code != 0 || f.Garbage != "" || f.Hang || f.Drop
}

// A FaultID names a fault added to a Server.
type FaultID int

type faultState struct {
	id      FaultID
	f       Fault
	matches int
	fired   int
}

// AddFault adds f after the faults already there and returns its id. When
// several faults fire for one command, the one added first acts; the others'
// counters still advance.
func (s *Server) AddFault(f Fault) FaultID {
	f.Cmd = strings.ToUpper(f.Cmd)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.faults = append(s.faults, &faultState{id: s.nextID, f: f})
	return s.nextID
}

// RemoveFault removes the fault id; it reports whether it was there.
func (s *Server) RemoveFault(id FaultID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, fs := range s.faults {
		if fs.id == id {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
			return true
		}
	}
	return false
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Fired returns how many times fault id has acted (0 for an unknown id).
func (s *Server) Fired(id FaultID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fs := range s.faults {
		if fs.id == id {
			return fs.fired
		}
	}
	return 0
}

// matchFault returns the fault that acts on the command (name is its full
// name, verb its verb; both Greeting for the greeting) on connection conn,
// advancing every matching fault's counter.
func (s *Server) matchFault(conn int, name, verb string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var act *faultState
	for _, fs := range s.faults {
		f := &fs.f
		switch {
		case f.Cmd == "" && name == Greeting:
			continue
		case f.Cmd != "" && f.Cmd != name && f.Cmd != verb:
			continue
		case f.Conn != 0 && f.Conn != conn:
			continue
		}
		fs.matches++
		fire := false
		if f.Nth > 0 {
			fire = fs.matches == f.Nth
		} else {
			fire = f.Times == 0 || fs.fired < f.Times
		}
		if fire && act == nil {
			act = fs
		}
	}
	if act == nil {
		return Fault{}, false
	}
	act.fired++
	return act.f, true
}

// ParseFault parses the one-line fault syntax the testscript harness uses:
// space-separated fields, each a flag or key=value, values Go-quoted when they
// hold spaces. Keys: cmd (underscores stand for spaces: cmd=MODE_STREAM),
// conn, nth, times, delay (a time.Duration), code, text, garbage (CRLF is
// added unless the value ends in LF), closeafter, rate. Flags: hang, drop,
// close. Example: `cmd=TAKETHIS nth=2 code=400 text="going down" close`.
func ParseFault(spec string) (Fault, error) {
	var f Fault
	fields, err := splitQuoted(spec)
	if err != nil {
		return Fault{}, fmt.Errorf("nntptest: fault %q: %w", spec, err)
	}
	for _, field := range fields {
		key, val, hasVal := strings.Cut(field, "=")
		num := func() (int, error) {
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("nntptest: fault %q: %s=%q is not a non-negative number", spec, key, val)
			}
			return n, nil
		}
		flag := func(p *bool) error {
			if hasVal {
				return fmt.Errorf("nntptest: fault %q: %s takes no value", spec, key)
			}
			*p = true
			return nil
		}
		if !hasVal {
			switch key {
			case "hang", "drop", "close":
			default:
				return Fault{}, fmt.Errorf("nntptest: fault %q: %q is not key=value or a flag (hang, drop, close)", spec, field)
			}
		}
		switch key {
		case "cmd":
			f.Cmd = strings.ToUpper(strings.ReplaceAll(val, "_", " "))
		case "conn":
			f.Conn, err = num()
		case "nth":
			f.Nth, err = num()
		case "times":
			f.Times, err = num()
		case "delay":
			f.Delay, err = time.ParseDuration(val)
			if err == nil && f.Delay < 0 {
				err = fmt.Errorf("nntptest: fault %q: negative delay", spec)
			}
		case "code":
			f.Code, err = num()
			if err == nil && (f.Code < 100 || f.Code > 599) {
				err = fmt.Errorf("nntptest: fault %q: code %d outside 100-599", spec, f.Code)
			}
		case "text":
			f.Text = val
			if strings.ContainsAny(val, "\r\n") {
				err = fmt.Errorf("nntptest: fault %q: text holds CR or LF", spec)
			}
		case "garbage":
			f.Garbage = val
			if val != "" && !strings.HasSuffix(val, "\n") {
				f.Garbage += "\r\n"
			}
		case "closeafter":
			f.CloseAfter, err = num()
		case "rate":
			f.Rate, err = num()
		case "hang":
			err = flag(&f.Hang)
		case "drop":
			err = flag(&f.Drop)
		case "close":
			err = flag(&f.Close)
		default:
			err = fmt.Errorf("nntptest: fault %q: unknown key %q", spec, key)
		}
		if err != nil {
			return Fault{}, err
		}
	}
	return f, nil
}

// String formats f in ParseFault's syntax; ParseFault(f.String()) gives f
// back for any f that ParseFault produced.
func (f Fault) String() string {
	var out []string
	add := func(key, val string) {
		if val == "" || strings.ContainsAny(val, " \t\"\\") || strconv.Quote(val) != `"`+val+`"` {
			val = strconv.Quote(val)
		}
		out = append(out, key+"="+val)
	}
	num := func(key string, n int) {
		if n != 0 {
			out = append(out, key+"="+strconv.Itoa(n))
		}
	}
	if f.Cmd != "" {
		add("cmd", strings.ReplaceAll(f.Cmd, " ", "_"))
	}
	num("conn", f.Conn)
	num("nth", f.Nth)
	num("times", f.Times)
	if f.Delay != 0 {
		out = append(out, "delay="+f.Delay.String())
	}
	num("code", f.Code)
	if f.Text != "" {
		add("text", f.Text)
	}
	if f.Garbage != "" {
		// Always quoted so the CRLF that ParseFault adds survives.
		out = append(out, "garbage="+strconv.Quote(f.Garbage))
	}
	num("closeafter", f.CloseAfter)
	num("rate", f.Rate)
	for _, fl := range []struct {
		on   bool
		name string
	}{{f.Hang, "hang"}, {f.Drop, "drop"}, {f.Close, "close"}} {
		if fl.on {
			out = append(out, fl.name)
		}
	}
	return strings.Join(out, " ")
}

// splitQuoted splits s at spaces and tabs; a value after "=" that starts
// with a double quote runs to its closing quote and is unquoted as a Go string.
func splitQuoted(s string) ([]string, error) {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return out, nil
		}
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			end = len(s)
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq > end || eq+1 >= len(s) || s[eq+1] != '"' {
			out = append(out, s[:end])
			s = s[end:]
			continue
		}
		q, err := strconv.QuotedPrefix(s[eq+1:])
		if err != nil {
			return nil, fmt.Errorf("unterminated or malformed quoted value in %q", s)
		}
		v, _ := strconv.Unquote(q)
		out = append(out, s[:eq+1]+v)
		s = s[eq+1+len(q):]
		if s != "" && s[0] != ' ' && s[0] != '\t' {
			return nil, fmt.Errorf("no space after quoted value %s", q)
		}
	}
}
