package inntest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// client is a minimal line-oriented NNTP client for talking to INN in tests.
type client struct {
	t  testing.TB
	c  net.Conn
	r  *bufio.Reader
	id string // for messages
}

// dial connects to addr and reads the greeting.
func dial(t testing.TB, addr string) (*client, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	// A generous bound so a wedged server fails the test instead of
	// hanging it; it is no assertion about speed.
	c.SetDeadline(time.Now().Add(time.Minute))
	cl := &client{t: t, c: c, r: bufio.NewReader(c), id: addr}
	return cl, cl.line()
}

// line reads one CRLF-terminated line without its ending.
func (cl *client) line() string {
	cl.t.Helper()
	l, err := cl.r.ReadString('\n')
	if err != nil {
		cl.t.Fatalf("%s: read: %v (got %q)", cl.id, err, l)
	}
	if !strings.HasSuffix(l, "\r\n") {
		cl.t.Fatalf("%s: line %q does not end in CRLF", cl.id, l)
	}
	return strings.TrimSuffix(l, "\r\n")
}

// send writes raw bytes.
func (cl *client) send(p []byte) {
	cl.t.Helper()
	if _, err := cl.c.Write(p); err != nil {
		cl.t.Fatalf("%s: write: %v", cl.id, err)
	}
}

// cmd sends one command line and returns the response line.
func (cl *client) cmd(line string) string {
	cl.t.Helper()
	cl.send([]byte(line + "\r\n"))
	return cl.line()
}

// block reads a multi-line block up to its terminating dot line and
// returns it undotted, with LF line ends.
func (cl *client) block() []byte {
	cl.t.Helper()
	var b bytes.Buffer
	for {
		l := cl.line()
		if l == "." {
			return b.Bytes()
		}
		b.WriteString(strings.TrimPrefix(l, "."))
		b.WriteByte('\n')
	}
}

// code returns the response code of a response line.
func code(resp string) int {
	n, _ := strconv.Atoi(strings.SplitN(resp, " ", 2)[0])
	return n
}

// wire turns a native article (LF line ends) into a dot-stuffed CRLF block
// with its terminating dot line.
func wire(native []byte) []byte {
	var b bytes.Buffer
	for _, l := range strings.SplitAfter(string(native), "\n") {
		if l == "" {
			continue
		}
		l = strings.TrimSuffix(l, "\n")
		if strings.HasPrefix(l, ".") {
			b.WriteByte('.')
		}
		b.WriteString(l + "\r\n")
	}
	b.WriteString(".\r\n")
	return b.Bytes()
}

// testArticle is a small article in native form; its body has a line that
// starts with a dot so dot stuffing is exercised on every path.
func testArticle(msgid, group string) []byte {
	return []byte(fmt.Sprintf("Path: upstream.invalid!not-for-mail\n"+
		"From: Tester <tester@example.invalid>\n"+
		"Newsgroups: %s\n"+
		"Subject: inntest %s\n"+
		"Date: Mon, 01 Jan 2024 00:00:00 +0000\n"+
		"Message-ID: %s\n"+
		"\n"+
		"Body of %s.\n"+
		".a line that starts with a dot\n"+
		"last line\n", group, msgid, msgid, msgid))
}

// body returns what follows the header/body separator.
func body(article []byte) string {
	_, b, _ := bytes.Cut(article, []byte("\n\n"))
	return string(b)
}

// header returns the first value of a header field, or "".
func header(article []byte, name string) string {
	head, _, _ := bytes.Cut(article, []byte("\n\n"))
	for _, l := range strings.Split(string(head), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// postIHAVE offers an article with IHAVE and returns the two responses.
func postIHAVE(cl *client, msgid string, art []byte) []string {
	first := cl.cmd("IHAVE " + msgid)
	if code(first) != 335 {
		return []string{first}
	}
	cl.send(wire(art))
	return []string{first, cl.line()}
}

// postStream offers an article with CHECK then TAKETHIS.
func postStream(cl *client, msgid string, art []byte) []string {
	check := cl.cmd("CHECK " + msgid)
	if code(check) != 238 {
		return []string{check}
	}
	cl.send([]byte("TAKETHIS " + msgid + "\r\n"))
	cl.send(wire(art))
	return []string{check, cl.line()}
}

// codes maps response lines to their codes, for comparison.
func codes(resps []string) []int {
	var cs []int
	for _, r := range resps {
		cs = append(cs, code(r))
	}
	return cs
}

func TestTransitServer(t *testing.T) {
	t.Parallel()
	srv := Start(t, Options{Reader: true, Groups: []Group{{Name: "local.test", Description: "Where tests post."}}})

	cl, greeting := dial(t, srv.Addr())
	for _, want := range []string{"200 ", "InterNetNews", "(transit mode)"} {
		if !strings.Contains(greeting, want) {
			t.Fatalf("greeting %q lacks %q", greeting, want)
		}
	}
	if resp := cl.cmd("CAPABILITIES"); code(resp) != 101 {
		t.Fatalf("CAPABILITIES: %q", resp)
	}
	caps := map[string]bool{}
	for _, l := range strings.Split(string(cl.block()), "\n") {
		caps[strings.Fields(l + " x")[0]] = true
	}
	for _, want := range []string{"IHAVE", "STREAMING", "MODE-READER"} {
		if !caps[want] {
			t.Errorf("CAPABILITIES lacks %s: %v", want, caps)
		}
	}

	posts := []struct {
		name  string
		msgid string
		post  func(*client, string, []byte) []string
		want  []int
	}{
		{"IHAVE", "<ihave.1@inntest.invalid>", postIHAVE, []int{335, 235}},
		{"CHECK and TAKETHIS", "<stream.1@inntest.invalid>", postStream, []int{238, 239}},
		{"IHAVE duplicate", "<ihave.1@inntest.invalid>", postIHAVE, []int{435}},
		{"CHECK duplicate", "<stream.1@inntest.invalid>", postStream, []int{438}},
	}
	for _, p := range posts {
		got := p.post(cl, p.msgid, testArticle(p.msgid, "local.test"))
		if diff := cmp.Diff(p.want, codes(got)); diff != "" {
			t.Fatalf("%s %s: responses %q (-want +got):\n%s", p.name, p.msgid, got, diff)
		}
	}
	stored := []string{"<ihave.1@inntest.invalid>", "<stream.1@inntest.invalid>"}

	toks, err := srv.Tokens(append(stored, "<never.sent@inntest.invalid>"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for id, tok := range toks {
		if !strings.HasPrefix(tok, "@") || !strings.HasSuffix(tok, "@") {
			t.Errorf("token for %s = %q, not @...@", id, tok)
		}
		got = append(got, id)
	}
	if diff := cmp.Diff(stored, got, cmpSorted); diff != "" {
		t.Errorf("Tokens found (-want +got):\n%s", diff)
	}
	if srv.HasArticle("<never.sent@inntest.invalid>") {
		t.Errorf("HasArticle reports an article never sent")
	}

	for _, id := range stored {
		art, err := srv.Article(id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(body(testArticle(id, "local.test")), body(art)); diff != "" {
			t.Errorf("stored body of %s (-want +got):\n%s", id, diff)
		}
		if path := header(art, "Path"); !strings.HasPrefix(path, srv.PathHost()+"!") {
			t.Errorf("stored Path %q does not start with %s!", path, srv.PathHost())
		}
	}

	readers := []struct {
		name       string
		addr       string
		modeReader bool
	}{
		{"innd feed port after MODE READER", srv.Addr(), true},
		{"standalone nnrpd", srv.ReaderAddr(), false},
	}
	for _, r := range readers {
		t.Run(r.name, func(t *testing.T) {
			rc, greeting := dial(t, r.addr)
			if code(greeting) != 200 && code(greeting) != 201 {
				t.Fatalf("greeting %q", greeting)
			}
			if r.modeReader {
				if resp := rc.cmd("GROUP local.test"); code(resp) != 401 {
					t.Errorf("GROUP before MODE READER on innd: %q, want 401", resp)
				}
				if resp := rc.cmd("MODE READER"); code(resp) != 200 && code(resp) != 201 {
					t.Fatalf("MODE READER: %q", resp)
				}
			}
			if diff := cmp.Diff("211 2 1 2 local.test", rc.cmd("GROUP local.test")); diff != "" {
				t.Errorf("GROUP (-want +got):\n%s", diff)
			}
			for _, id := range stored {
				if resp := rc.cmd("ARTICLE " + id); code(resp) != 220 {
					t.Fatalf("ARTICLE %s: %q", id, resp)
				}
				art := rc.block()
				if diff := cmp.Diff(body(testArticle(id, "local.test")), body(art)); diff != "" {
					t.Errorf("body of %s read back (-want +got):\n%s", id, diff)
				}
			}
			if resp := rc.cmd("ARTICLE <never.sent@inntest.invalid>"); code(resp) != 430 {
				t.Errorf("ARTICLE of an unknown article: %q, want 430", resp)
			}
			if resp := rc.cmd("QUIT"); code(resp) != 205 {
				t.Errorf("QUIT: %q", resp)
			}
		})
	}

	if resp := cl.cmd("QUIT"); code(resp) != 205 {
		t.Errorf("QUIT: %q", resp)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := net.DialTimeout("tcp", srv.Addr(), time.Second); err == nil {
		t.Errorf("innd still accepts connections after Close")
	}
}

// cmpSorted compares string slices as sets.
var cmpSorted = cmp.Transformer("sorted", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
})

// postMany feeds n articles to srv with TAKETHIS (no CHECK) on one
// connection and returns their message-IDs.
func postMany(t *testing.T, srv *Server, prefix string, n int) []string {
	t.Helper()
	cl, _ := dial(t, srv.Addr())
	if resp := cl.cmd("MODE STREAM"); code(resp) != 203 {
		t.Fatalf("MODE STREAM: %q", resp)
	}
	var ids []string
	var out bytes.Buffer
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("<%s.%d@inntest.invalid>", prefix, i)
		ids = append(ids, id)
		out.WriteString("TAKETHIS " + id + "\r\n")
		out.Write(wire(testArticle(id, "local.test")))
	}
	// Write and read concurrently so neither side's buffers can fill.
	errc := make(chan error, 1)
	go func() {
		_, err := cl.c.Write(out.Bytes())
		errc <- err
	}()
	for _, id := range ids {
		if diff := cmp.Diff("239 "+id, cl.line()); diff != "" {
			t.Fatalf("TAKETHIS response (-want +got):\n%s", diff)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return ids
}

// missing lists the message-IDs srv does not store.
func missing(t *testing.T, srv *Server, ids []string) []string {
	t.Helper()
	toks, err := srv.Tokens(ids)
	if err != nil {
		t.Fatal(err)
	}
	var miss []string
	for _, id := range ids {
		if toks[id] == "" {
			miss = append(miss, id)
		}
	}
	return miss
}

func TestFeeders(t *testing.T) {
	t.Parallel()
	from := Start(t, Options{})
	to := Start(t, Options{})
	const n = 40
	ctx := context.Background()

	cases := []struct {
		name string
		run  func(batch []byte) (unsent int, err error)
	}{
		{"innfeed streaming", func(batch []byte) (int, error) {
			res, err := from.RunInnfeed(ctx, batch, InnfeedOptions{Addr: to.Addr(), Connections: 2})
			t.Logf("innfeed streaming: %d articles in %v", n, res.Elapsed)
			return res.Unsent, err
		}},
		{"innfeed IHAVE", func(batch []byte) (int, error) {
			res, err := from.RunInnfeed(ctx, batch, InnfeedOptions{Addr: to.Addr(), NoStreaming: true})
			t.Logf("innfeed IHAVE: %d articles in %v", n, res.Elapsed)
			return res.Unsent, err
		}},
		{"innxmit streaming", func(batch []byte) (int, error) {
			res, err := from.RunInnxmit(ctx, batch, InnxmitOptions{Addr: to.Addr()})
			t.Logf("innxmit: %d articles in %v: %s", n, res.Elapsed, strings.TrimSpace(res.Output))
			return res.Unsent, err
		}},
		{"innxmit IHAVE", func(batch []byte) (int, error) {
			res, err := from.RunInnxmit(ctx, batch, InnxmitOptions{Addr: to.Addr(), NoStreaming: true})
			return res.Unsent, err
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ids := postMany(t, from, fmt.Sprintf("feeder%d", i), n)
			if miss := missing(t, to, ids); len(miss) != n {
				t.Fatalf("receiver has %d of the articles before the feed", n-len(miss))
			}
			batch, err := from.BatchLines(ids)
			if err != nil {
				t.Fatal(err)
			}
			unsent, err := tc.run(batch)
			if err != nil {
				t.Fatal(err)
			}
			if unsent != 0 {
				t.Errorf("%d articles left unsent", unsent)
			}
			if diff := cmp.Diff([]string(nil), missing(t, to, ids)); diff != "" {
				t.Errorf("articles missing at the receiver (-want +got):\n%s", diff)
			}
			art, err := to.Article(ids[0])
			if err != nil {
				t.Fatal(err)
			}
			wantPath := to.PathHost() + "!" + from.PathHost() + "!upstream.invalid!not-for-mail"
			if diff := cmp.Diff(wantPath, header(art, "Path")); diff != "" {
				t.Errorf("Path at the receiver (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFeedsOut(t *testing.T) {
	t.Parallel()
	live := Start(t, Options{})
	batched := Start(t, Options{})
	src := Start(t, Options{Feeds: []Feed{
		{Name: "live", Addr: live.Addr()},
		{Name: "batched", Addr: batched.Addr(), Kind: FeedFile},
	}})
	ids := postMany(t, src, "out", 10)

	// innd hands articles to its innfeed channel at once, but innfeed sends
	// them on its own schedule; poll with a bound that only a broken feed
	// reaches.
	deadline := time.Now().Add(60 * time.Second)
	for len(missing(t, live, ids)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if diff := cmp.Diff([]string(nil), missing(t, live, ids)); diff != "" {
		t.Errorf("articles the innfeed channel did not deliver (-want +got):\n%s", diff)
	}

	if miss := missing(t, batched, ids); len(miss) != len(ids) {
		t.Fatalf("file feed site got %d articles before SendFileFeed", len(ids)-len(miss))
	}
	res, err := src.SendFileFeed(context.Background(), "batched")
	if err != nil {
		t.Fatal(err)
	}
	if res.Unsent != 0 {
		t.Errorf("SendFileFeed left %d unsent: %s", res.Unsent, res.Output)
	}
	if diff := cmp.Diff([]string(nil), missing(t, batched, ids)); diff != "" {
		t.Errorf("articles the file feed did not deliver (-want +got):\n%s", diff)
	}
	// A second send finds nothing new to send.
	res, err = src.SendFileFeed(context.Background(), "batched")
	if err != nil || res.Unsent != 0 {
		t.Errorf("second SendFileFeed: unsent %d, err %v", res.Unsent, err)
	}
}

func TestReaderAuth(t *testing.T) {
	t.Parallel()
	srv := Start(t, Options{Reader: true, Users: []User{{"alice", "s3cret"}, {"bob", "hunter2"}}})
	cases := []struct {
		name     string
		user     string
		pass     string
		wantAuth []int // AUTHINFO USER, AUTHINFO PASS
		wantRead int   // GROUP local.test afterwards
	}{
		{"no credentials", "", "", nil, 480},
		{"right password", "alice", "s3cret", []int{381, 281}, 211},
		{"second user", "bob", "hunter2", []int{381, 281}, 211},
		{"wrong password", "alice", "hunter2", []int{381, 481}, 480},
		{"unknown user", "mallory", "s3cret", []int{381, 481}, 480},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl, greeting := dial(t, srv.ReaderAddr())
			if code(greeting) != 200 && code(greeting) != 201 {
				t.Fatalf("greeting %q", greeting)
			}
			var got []int
			if tc.user != "" {
				got = append(got, code(cl.cmd("AUTHINFO USER "+tc.user)))
				got = append(got, code(cl.cmd("AUTHINFO PASS "+tc.pass)))
			}
			got = append(got, code(cl.cmd("GROUP local.test")))
			if diff := cmp.Diff(append(tc.wantAuth, tc.wantRead), got); diff != "" {
				t.Errorf("response codes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPeerPassword(t *testing.T) {
	t.Parallel()
	srv := Start(t, Options{Peers: []Peer{{Name: "authpeer", Hosts: []string{"127.0.0.1"}, Password: "pw"}}})
	cases := []struct {
		name string
		cmds []string
		want []int
	}{
		{"IHAVE without AUTHINFO", []string{"IHAVE <a@inntest.invalid>"}, []int{480}},
		{"wrong password", []string{"AUTHINFO USER authpeer", "AUTHINFO PASS nope", "IHAVE <a@inntest.invalid>"}, []int{381, 481, 480}},
		{"right password", []string{"AUTHINFO USER authpeer", "AUTHINFO PASS pw", "IHAVE <a@inntest.invalid>"}, []int{381, 281, 335}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl, greeting := dial(t, srv.Addr())
			if code(greeting) != 200 {
				t.Fatalf("greeting %q", greeting)
			}
			var got []int
			for _, c := range tc.cmds {
				got = append(got, code(cl.cmd(c)))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("response codes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStartFailureShowsLogs(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping INN-backed test: %v", err)
	}
	cred, _ := newsCredential()
	dir, err := instanceDir(t, cred)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{tb: t, dir: layout{dir}, opts: Options{}.withDefaults(), cred: cred}
	if err := s.configure(); err != nil {
		t.Fatal(err)
	}
	// An unknown storage method makes innd give up at start-up.
	if err := s.writeOwned(map[string][]byte{
		s.dir.path("etc", "storage.conf"): []byte("method nosuchmethod {\n    newsgroups: *\n    class: 0\n}\n"),
	}); err != nil {
		t.Fatal(err)
	}
	err = s.launch()
	s.kill()
	if err == nil {
		t.Fatal("innd started with a broken storage.conf")
	}
	for _, want := range []string{"innd exited during start-up", "innd.out"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error lacks %q:\n%v", want, err)
		}
	}
}

func TestLoopbackPort(t *testing.T) {
	cases := []struct {
		addr    string
		want    int
		wantErr bool
	}{
		{"127.0.0.1:119", 119, false},
		{"127.3.4.5:1190", 1190, false},
		{"[::1]:563", 563, false},
		{"localhost:8119", 8119, false},
		{"10.0.0.1:119", 0, true},
		{"news.example.com:119", 0, true},
		{"127.0.0.1", 0, true},
		{"127.0.0.1:0", 0, true},
		{"127.0.0.1:70000", 0, true},
	}
	for _, tc := range cases {
		got, err := loopbackPort(tc.addr)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("loopbackPort(%q) = %d, %v; want %d, error %t", tc.addr, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name    string
		opts    Options
		wantErr bool
	}{
		{"defaults", Options{}, false},
		{"feed to loopback", Options{Feeds: []Feed{{Name: "nf", Addr: "127.0.0.1:1119"}}}, false},
		{"feed off loopback", Options{Feeds: []Feed{{Name: "nf", Addr: "192.168.1.1:119"}}}, true},
		{"feed without name", Options{Feeds: []Feed{{Addr: "127.0.0.1:1119"}}}, true},
		{"duplicate feed", Options{Feeds: []Feed{{Name: "a", Addr: "127.0.0.1:1"}, {Name: "a", Addr: "127.0.0.1:2"}}}, true},
		{"group with space", Options{Groups: []Group{{Name: "a b"}}}, true},
		{"user with colon", Options{Users: []User{{"a:b", "c"}}}, true},
	}
	for _, tc := range cases {
		err := tc.opts.withDefaults().validate()
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: validate() = %v, want error %t", tc.name, err, tc.wantErr)
		}
	}
}

// BenchmarkStartStop measures one private INN's start and clean stop, the
// fixed cost every INN-backed test pays.
func BenchmarkStartStop(b *testing.B) {
	for b.Loop() {
		srv := Start(b, Options{})
		if err := srv.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCountBacklog(t *testing.T) {
	const line = "@0201000000000000000000000000000000@ <a@b>\n"
	cases := []struct {
		name  string
		files map[string]string
		want  int
	}{
		{"nothing left", nil, 0},
		{"untouched batch", map[string]string{"p": line + line}, 2},
		{"output backlog", map[string]string{"p.output": line + line + line}, 3},
		// .input starts with the checkpointed offset: here just past the
		// first article line, leaving one.
		{"input past checkpoint", map[string]string{"p.input": fmt.Sprintf("%-10d\n", 11+len(line)) + line + line}, 1},
		{"input without progress", map[string]string{"p.input": fmt.Sprintf("%-10d\n", 0) + line + line}, 2},
		{"other peer ignored", map[string]string{"q.output": line}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := countBacklog(dir, "p")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("countBacklog = %d, want %d", got, tc.want)
			}
		})
	}
}
