package ingest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
)

// session is a feeding session that touches every path of the parser:
// capabilities, streaming, pipelined CHECKs, good and bad TAKETHIS
// articles, an over-long line, IHAVE and QUIT.
var session = "CAPABILITIES\r\nMODE STREAM\r\n" +
	"CHECK <s1@example.com>\r\nCHECK <s2@example.com>\r\nCHECK bad\r\n" +
	takethis("<s1@example.com>", article("<s1@example.com>")) +
	takethis("<s2@example.com>", article("<s3@example.com>")) +
	takethis("<s4@example.com>", article("<s4@example.com>", "body:"+strings.Repeat("yyyyyyyyy\r\n", 100))) +
	"TAKETHIS\r\n" + block(article("<s5@example.com>")) +
	strings.Repeat("z", 600) + "\r\n" +
	"IHAVE <s6@example.com>\r\n" + block(article("<s6@example.com>", "Path: x!relay.example!y")) +
	"IHAVE <s7@example.com>\r\n" + block(article("<s7@example.com>")) +
	"DATE\r\nHELP\r\nQUIT\r\n"

// outcome is everything a run produced.
type outcome struct {
	Out    string
	Events []string
	Closed bool
}

// drive runs input through an Ingest with a synchronous owner, cut into
// the given pieces.
func drive(cfg Config, policy string, pieces [][]byte) outcome {
	out, _ := driveOwner(cfg, policy, pieces)
	return out
}

// driveOwner is drive, also returning the owner.
func driveOwner(cfg Config, policy string, pieces [][]byte) (outcome, *owner) {
	o, err := parseOwner(policy)
	if err != nil {
		panic(err)
	}
	c := &ownedConn{Ingest: New(t0, cfg), o: o}
	out := c.AppendOutgoing(nil)
	for _, p := range pieces {
		if c.Closed() {
			break
		}
		c.Receive(t0, p)
		out = c.AppendOutgoing(out)
	}
	return outcome{Out: string(out), Events: o.log, Closed: c.Closed()}, o
}

func split(b []byte, cuts ...int) [][]byte {
	var out [][]byte
	last := 0
	for _, c := range cuts {
		out = append(out, b[last:c])
		last = c
	}
	return append(out, b[last:])
}

func bytewise(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

// TestSplitInvariance: the same bytes give the same responses and events
// however the reads cut them: whole, one byte at a time, and cut in two at
// every offset.
func TestSplitInvariance(t *testing.T) {
	cfg := Config{PathHost: "relay.example", MaxArticleSize: 600}
	in := []byte(session)
	want := drive(cfg, "want all, store ok", [][]byte{in})
	if !want.Closed || !strings.HasSuffix(want.Out, "205 Bye\r\n") {
		t.Fatalf("the session did not end with QUIT:\n%s", want.Out)
	}
	if got := drive(cfg, "want all, store ok", bytewise(in)); !cmp.Equal(want, got) {
		t.Errorf("byte by byte (-whole +bytewise):\n%s", cmp.Diff(want, got))
	}
	for k := 1; k < len(in); k++ {
		if got := drive(cfg, "want all, store ok", split(in, k)); !cmp.Equal(want, got) {
			t.Fatalf("cut at %d (-whole +cut):\n%s", k, cmp.Diff(want, got))
		}
	}
}

// referenceCount is a simple model of the machine's framing: how many
// status lines a peer sending in gets from a relay that wants and stores
// everything, and whether the connection closes. It knows which commands
// exist and their arguments, which carry an article block, and the limits
// (512-octet lines, ten bad commands in a row), nothing else.
func referenceCount(in []byte) (n int, closed bool) {
	arity := map[string][2]int{
		"CAPABILITIES": {0, 1}, "MODE STREAM": {1, 1}, "MODE READER": {1, 1}, "CHECK": {1, 1},
		"TAKETHIS": {1, 1}, "IHAVE": {1, 1}, "HELP": {0, 0}, "DATE": {0, 0}, "QUIT": {0, 0},
	}
	bad := 0
	// badResp counts a 500/501, which the tenth in a row replaces by 400 and close.
	badResp := func() bool {
		n++
		bad++
		return bad >= maxBadCommands
	}
	// skipBlock consumes an article block; false if it does not end.
	skipBlock := func() bool {
		d := proto.NewBlockDecoder(blockMaxLine)
		_, used, done, _ := d.Decode(nil, in)
		in = in[used:]
		return done
	}
	for len(in) > 0 {
		i := bytes.IndexByte(in, '\n')
		if i < 0 && len(in) < proto.MaxCommandLine {
			return n, false
		}
		if i < 0 || i+1 > proto.MaxCommandLine {
			if badResp() {
				return n, true
			}
			if i < 0 {
				return n, false
			}
			in = in[i+1:]
			continue
		}
		line := in[:i+1]
		in = in[i+1:]
		c, err := proto.ParseCommand(line)
		if err != nil {
			if badResp() {
				return n, true
			}
			continue
		}
		name := c.Name()
		ar, ok := arity[name]
		if !ok && c.Verb == "MODE" {
			if badResp() { // 501 Unknown MODE variant
				return n, true
			}
			continue
		}
		if !ok {
			if badResp() {
				return n, true
			}
			continue
		}
		if len(c.Args) < ar[0] || len(c.Args) > ar[1] {
			if badResp() {
				return n, true
			}
			if name == "TAKETHIS" && !skipBlock() {
				return n, false
			}
			continue
		}
		bad = 0
		switch name {
		case "QUIT", "MODE READER":
			return n + 1, true
		case "TAKETHIS":
			if !skipBlock() {
				return n, false
			}
			n++
		case "IHAVE":
			n++ // 335, or 435 for a malformed id
			if proto.ValidMessageID(c.Args[0]) == nil {
				if !skipBlock() {
					return n, false
				}
				n++
			}
		default:
			n++
		}
	}
	return n, false
}

// statusLines checks that out is a sequence of well-formed responses (RFC
// 3977 §3.1, §3.2: a three-digit code, at most 512 octets with CRLF, no
// control characters) with the blocks of 100 and 101, and counts them.
func statusLines(out string) (int, error) {
	n := 0
	inBlock := false
	for out != "" {
		line, rest, ok := strings.Cut(out, "\r\n")
		if !ok {
			return n, fmt.Errorf("output ends without CRLF: %q", out)
		}
		out = rest
		if inBlock {
			if line == "." {
				inBlock = false
			}
			continue
		}
		if len(line)+2 > proto.MaxResponseLine {
			return n, fmt.Errorf("response of %d octets: %q", len(line)+2, line)
		}
		if strings.ContainsFunc(line, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return n, fmt.Errorf("control character in %q", line)
		}
		r, err := proto.ParseResponse([]byte(line))
		if err != nil {
			return n, err
		}
		n++
		inBlock = r.Code == proto.CodeHelp || r.Code == proto.CodeCapabilities
	}
	if inBlock {
		return n, fmt.Errorf("unterminated block")
	}
	return n, nil
}

// FuzzIngest feeds arbitrary peer bytes to an Ingest whose owner wants and
// stores everything. Properties: no panic; every response is well-formed;
// the number of responses and whether the connection closed agree with
// referenceCount (one response per complete command, two for IHAVE); the
// outcome does not depend on how the bytes are cut (whole, byte by byte,
// in two at an offset taken from the input).
func FuzzIngest(f *testing.F) {
	f.Add([]byte(session))
	f.Add([]byte("MODE STREAM\r\nCHECK <a@b>\r\n" + takethis("<a@b>", article("<a@b>"))))
	f.Add([]byte("IHAVE <a@b>\r\n" + block(article("<a@b>")) + "QUIT\r\n"))
	f.Add([]byte("TAKETHIS <a@b>\r\n.\r\nTAKETHIS\r\n..\r\n.\r\nCHECK\r\n"))
	f.Add([]byte(strings.Repeat("x", 700) + "\nDATE\n"))
	f.Add([]byte(strings.Repeat("BAD\r\n", 12)))
	f.Add([]byte("mode reader\r\nDATE\r\n"))
	f.Add([]byte("TAKETHIS <a@b>\r\nPath: x\r\n.\n"))
	cfg := Config{PathHost: "relay.example", MaxArticleSize: 300}
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, o := driveOwner(cfg, "want all, store ok", [][]byte{in})
		// Every stored article has a wire form the spool takes: it ends in
		// "\r\n.\r\n" and decodes to the article with the Path identity.
		for _, a := range o.stored {
			// As the relay stores it: Path identity prepended, wire form.
			withPath, err := proto.PrependPathIdentity(nil, a.Data, a.Header, "relay.example")
			if err != nil {
				t.Fatalf("PrependPathIdentity(%s): %v", a.MessageID, err)
			}
			w := proto.AppendWire(nil, withPath)
			if !bytes.HasSuffix(w, []byte("\r\n.\r\n")) {
				t.Fatalf("wire form of %s ends %q", a.MessageID, w[max(0, len(w)-8):])
			}
			d := proto.NewBlockDecoder(blockMaxLine)
			back, n, done, err := d.Decode(nil, w)
			h, _, herr := proto.ParseHeaders(back)
			wantPath := append([]string{"relay.example"}, proto.PathIdentities(a.Header.Path())...)
			if err != nil || !done || n != len(w) || herr != nil || !cmp.Equal(wantPath, proto.PathIdentities(h.Path())) {
				t.Fatalf("wire form of %s does not decode back: %v %v %d/%d %v", a.MessageID, err, done, n, len(w), herr)
			}
		}
		n, err := statusLines(whole.Out)
		if err != nil {
			t.Fatalf("malformed output: %v\n%q", err, whole.Out)
		}
		wantN, wantClosed := referenceCount(in)
		if n != wantN+1 || whole.Closed != wantClosed { // +1: the greeting
			t.Fatalf("%d responses (closed %v), reference says %d (closed %v)\noutput: %q", n-1, whole.Closed, wantN, wantClosed, whole.Out)
		}
		if len(in) <= 4096 {
			if got := drive(cfg, "want all, store ok", bytewise(in)); !cmp.Equal(whole, got) {
				t.Fatalf("byte by byte differs (-whole +bytewise):\n%s", cmp.Diff(whole, got))
			}
		}
		if len(in) > 1 {
			k := int(in[0]) % len(in)
			if got := drive(cfg, "want all, store ok", split(in, k)); !cmp.Equal(whole, got) {
				t.Fatalf("cut at %d differs (-whole +cut):\n%s", k, cmp.Diff(whole, got))
			}
		}
	})
}

// FuzzFastCommand: the fast path for CHECK and TAKETHIS agrees with
// proto.ParseCommand whenever it accepts a line, and accepts the common
// shapes.
func FuzzFastCommand(f *testing.F) {
	for _, s := range []string{"CHECK <a@b>\r\n", "TAKETHIS <a@b>\n", "CHECK  <a@b>\r\n", "CHECK <a@b> x\r\n",
		"check <a@b>\r\n", "CHECK <a\x01b>\r\n", "CHECK <a@b>\r\r\n", "TAKETHIS \r\n", "CHECK\r\n", "CHECK <\xff@b>\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		g := New(t0, testCfg)
		c, ok := g.fastCommand(line)
		if !ok {
			return
		}
		want, err := proto.ParseCommand(line)
		if err != nil {
			t.Fatalf("fast path took %q, ParseCommand refuses it: %v", line, err)
		}
		if diff := cmp.Diff(want, c); diff != "" {
			t.Fatalf("fast path parsed %q differently (-ParseCommand +fast):\n%s", line, diff)
		}
	})
}

// TestFastCommand names the lines the fast path must take or leave.
func TestFastCommand(t *testing.T) {
	cases := []struct {
		name, line string
		ok         bool
	}{
		{"CHECK", "CHECK <a@b>\r\n", true},
		{"TAKETHIS, bare LF", "TAKETHIS <a@b>\n", true},
		{"lower case goes the general way", "check <a@b>\r\n", false},
		{"two spaces", "CHECK  <a@b>\r\n", false},
		{"two arguments", "CHECK <a@b> x\r\n", false},
		{"a control octet", "CHECK <a\x01b@c>\r\n", false},
		{"CR before CRLF", "CHECK <a@b>\r\r\n", false},
		{"no argument", "TAKETHIS \r\n", false},
		{"over 512 octets (fuzz find: ParseCommand refuses it)", "TAKETHIS <" + strings.Repeat("x", 600) + "@b>\r\n", false},
		{"non-ASCII octets are kept", "CHECK <\xff@b>\r\n", true},
	}
	for _, tc := range cases {
		g := New(t0, testCfg)
		c, ok := g.fastCommand([]byte(tc.line))
		if ok != tc.ok {
			t.Errorf("%s: fast path took it: %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if ok {
			want, _ := proto.ParseCommand([]byte(tc.line))
			if diff := cmp.Diff(want, c); diff != "" {
				t.Errorf("%s (-ParseCommand +fast):\n%s", tc.name, diff)
			}
		}
	}
}

// TestPathHolds: the allocation-free Path check agrees with
// proto.PathContains, and the Message-ID comparison with Header.Get.
func TestPathHolds(t *testing.T) {
	paths := []string{"", "relay.example", "a!relay.example!b", "a!RELAY.EXAMPLE", " relay.example !x", "a!relay.example.org!b",
		"a!\r\n relay.example!b", "relay.exampl", "!!relay.example!!", "a!b!c", "xrelay.example!y", "relay.example\t!z"}
	for _, p := range paths {
		h, _, err := proto.ParseHeaders([]byte("Path: " + p + "\r\nMessage-ID: " + p + "\r\n\r\n"))
		if err != nil {
			t.Fatal(err)
		}
		f, _ := h.Field("Path")
		for _, id := range []string{"relay.example", "b", "x"} {
			if got, want := pathHolds(f.Raw, id), proto.PathContains(h.Path(), id); got != want {
				t.Errorf("pathHolds(%q, %q) = %v, PathContains says %v", p, id, got, want)
			}
		}
		m, _ := h.Field("Message-ID")
		for _, s := range []string{strings.TrimSpace(p), h.Get("Message-ID"), "x"} {
			if got, want := fieldIs(m, s), h.Get("Message-ID") == s; got != want {
				t.Errorf("fieldIs(%q, %q) = %v, Get says %v", p, s, got, want)
			}
		}
	}
}
