package testscripts

// The NNTP commands scripts use, backed by runtime/testpeer/nntptest:
//
//	nntpserver [-name N] [options]     start a test server for the rest of the script
//	nntpclient [-server N | -addr A] [-tls] [-ca FILE] FILE
//	                                   play a client exchange from FILE, print it to stdout
//	nntpcount [-server N] [-conn C] VERB COUNT
//	nntpcount [-server N] -conns COUNT assert what the server received
//	nntpfault [-server N] SPEC | -clear   add a fault while running, or remove them all
//	nntpreceived [-server N] [-article ID]
//	                                   print the articles received by TAKETHIS/IHAVE/POST
//
// See each command's function for its details.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/rogpeppe/go-internal/testscript"
)

var nntpCommands = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"nntpserver":   cmdServer,
	"nntpclient":   cmdClient,
	"nntpcount":    cmdCount,
	"nntpfault":    cmdFault,
	"nntpreceived": cmdReceived,
}

// ioLimit bounds every wait for the network, and for a daemon's address
// file or background work (httpget -until), so a broken server fails a
// script instead of hanging it. It is no measure of speed: a loaded 2-core
// runner running other packages' tests beside the scripts must not reach
// it.
const ioLimit = time.Minute

type stateKey struct{}

// state is one script's servers, by name ("" for the unnamed one).
type state struct {
	mu      sync.Mutex
	servers map[string]*nntptest.Server
}

func setupNNTP(env *testscript.Env) error {
	env.Values[stateKey{}] = &state{servers: make(map[string]*nntptest.Server)}
	return nil
}

func scriptState(ts *testscript.TestScript) *state {
	return ts.Value(stateKey{}).(*state)
}

// server returns the server named name, failing the script if none.
func server(ts *testscript.TestScript, name string) *nntptest.Server {
	st := scriptState(ts)
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.servers[name]
	if s == nil {
		if name == "" {
			ts.Fatalf("no nntpserver running")
		}
		ts.Fatalf("no nntpserver named %q", name)
	}
	return s
}

// envName is the environment variable for a server's value: NNTP_ADDR, or
// NNTP_UP_ADDR for the server named "up".
func envName(server, what string) string {
	if server == "" {
		return "NNTP_" + what
	}
	return "NNTP_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(server)) + "_" + what
}

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, " ") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func newFlags(ts *testscript.TestScript, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(ts.Stderr())
	return fs
}

// cmdServer starts an nntptest server that lives until the script ends, and
// exports its address as $NNTP_ADDR (and $NNTP_HOST, $NNTP_PORT, and with
// TLS $NNTP_CA, a PEM file trusting its certificate). With -name up, the
// variables are $NNTP_UP_ADDR and so on. Options:
//
//	-groups FILE        one group per line: "name [status [description...]]"; # comments
//	-articles PATH      an article file (native or wire form), or a directory of
//	                    them read in name order; repeatable; numbered in order
//	-auth USER:PASS     require AUTHINFO (480 before it)
//	-auth-optional      with -auth: accept AUTHINFO but do not require it
//	-tls MODE           starttls or implicit
//	-transit            answer reader commands 401 MODE-READER until MODE READER
//	-nocaps             CAPABILITIES answers 500
//	-caps FILE          the CAPABILITIES list, one per line
//	-nostream           MODE STREAM, CHECK and TAKETHIS answer 500
//	-noposting          greeting 201, POST 440
//	-keep               store articles accepted by TAKETHIS/IHAVE
//	-rule ID=V[,V...]   verdicts (want, defer, refuse, reject) for an id, one per
//	                    offer, the last repeating; ID * sets the default
//	                    (otherwise: refuse what the server has, want the rest)
//	-fault SPEC         a fault in nntptest.ParseFault syntax; repeatable
//	-now YYYYMMDDhhmmss a fixed clock for DATE and arrival times
func cmdServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! nntpserver")
	}
	fs := newFlags(ts, "nntpserver")
	name := fs.String("name", "", "server name")
	groups := fs.String("groups", "", "groups file")
	var articles, rules, faults list
	fs.Var(&articles, "articles", "article file or directory")
	auth := fs.String("auth", "", "USER:PASS")
	authOptional := fs.Bool("auth-optional", false, "do not require AUTHINFO")
	tlsMode := fs.String("tls", "", "starttls or implicit")
	transit := fs.Bool("transit", false, "act like innd's feed port")
	nocaps := fs.Bool("nocaps", false, "CAPABILITIES answers 500")
	caps := fs.String("caps", "", "capabilities file")
	nostream := fs.Bool("nostream", false, "refuse streaming")
	noposting := fs.Bool("noposting", false, "refuse POST")
	keep := fs.Bool("keep", false, "keep received articles")
	fs.Var(&rules, "rule", "ID=VERDICT[,VERDICT...]")
	fs.Var(&faults, "fault", "fault spec")
	now := fs.String("now", "", "fixed clock, YYYYMMDDhhmmss")
	if err := fs.Parse(args); err != nil {
		ts.Fatalf("nntpserver: %v", err)
	}
	if fs.NArg() != 0 {
		ts.Fatalf("nntpserver: unexpected arguments %q", fs.Args())
	}
	st := scriptState(ts)
	st.mu.Lock()
	_, dup := st.servers[*name]
	st.mu.Unlock()
	if dup {
		ts.Fatalf("nntpserver: a server named %q is already running", *name)
	}

	opts := nntptest.Options{
		Transit: *transit, NoCapabilities: *nocaps, NoStreaming: *nostream,
		NoPosting: *noposting, KeepReceived: *keep,
	}
	if *auth != "" {
		u, p, ok := strings.Cut(*auth, ":")
		if !ok {
			ts.Fatalf("nntpserver: -auth wants USER:PASS")
		}
		opts.Auth = &nntptest.Auth{User: u, Pass: p, Required: !*authOptional}
	}
	switch *tlsMode {
	case "":
	case "starttls":
		opts.TLS = nntptest.StartTLS
	case "implicit":
		opts.TLS = nntptest.ImplicitTLS
	default:
		ts.Fatalf("nntpserver: -tls %q: want starttls or implicit", *tlsMode)
	}
	if *caps != "" {
		opts.Capabilities = []string{}
		for _, l := range lines(ts.ReadFile(*caps)) {
			opts.Capabilities = append(opts.Capabilities, l)
		}
	}
	if *now != "" {
		t, err := time.Parse("20060102150405", *now)
		if err != nil {
			ts.Fatalf("nntpserver: -now: %v", err)
		}
		opts.Now = func() time.Time { return t }
	}
	s, err := nntptest.New(opts)
	ts.Check(err)
	ts.Defer(func() { s.Close() })
	if len(rules) > 0 {
		r, err := parseRules(rules, s)
		ts.Check(err)
		s.SetRule(r)
	}
	for _, spec := range faults {
		f, err := nntptest.ParseFault(spec)
		ts.Check(err)
		s.AddFault(f)
	}
	if *groups != "" {
		for _, l := range lines(ts.ReadFile(*groups)) {
			f := strings.Fields(l)
			g := nntptest.Group{Name: f[0]}
			if len(f) > 1 {
				g.Status = f[1]
			}
			if len(f) > 2 {
				g.Description = strings.Join(f[2:], " ")
			}
			s.AddGroup(g)
		}
	}
	for _, a := range articles {
		for _, file := range articleFiles(ts, a) {
			raw, err := os.ReadFile(file)
			ts.Check(err)
			if err := s.AddArticle(nntptest.Article{Raw: raw}); err != nil {
				ts.Fatalf("nntpserver: %s: %v", file, err)
			}
		}
	}

	st.mu.Lock()
	st.servers[*name] = s
	st.mu.Unlock()
	host, port, _ := net.SplitHostPort(s.HostPort())
	ts.Setenv(envName(*name, "ADDR"), s.HostPort())
	ts.Setenv(envName(*name, "HOST"), host)
	ts.Setenv(envName(*name, "PORT"), port)
	if pem := s.CertPEM(); pem != nil {
		file := ts.MkAbs(strings.ToLower(envName(*name, "ca")) + ".pem")
		ts.Check(os.WriteFile(file, pem, 0o644))
		ts.Setenv(envName(*name, "CA"), file)
	}
}

// lines returns the non-empty lines of text that are not # comments.
func lines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func articleFiles(ts *testscript.TestScript, path string) []string {
	path = ts.MkAbs(path)
	fi, err := os.Stat(path)
	ts.Check(err)
	if !fi.IsDir() {
		return []string{path}
	}
	ents, err := os.ReadDir(path)
	ts.Check(err)
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			out = append(out, filepath.Join(path, e.Name()))
		}
	}
	return out // ReadDir sorts by name
}

// parseRules builds the streaming rule of -rule flags.
func parseRules(specs []string, s *nntptest.Server) (nntptest.Rule, error) {
	seqs := make(map[string][]nntptest.Verdict)
	var star *nntptest.Verdict
	for _, spec := range specs {
		id, vs, ok := strings.Cut(spec, "=")
		if !ok {
			return nil, fmt.Errorf("nntpserver: -rule %q: want ID=VERDICT[,VERDICT...]", spec)
		}
		var seq []nntptest.Verdict
		for _, v := range strings.Split(vs, ",") {
			verdict, err := nntptest.ParseVerdict(v)
			if err != nil {
				return nil, fmt.Errorf("nntpserver: -rule %q: %w", spec, err)
			}
			seq = append(seq, verdict)
		}
		if id == "*" {
			star = &seq[0]
			continue
		}
		seqs[id] = seq
	}
	named := nntptest.Sequence(seqs, nntptest.Want)
	return func(cmd, id string) nntptest.Verdict {
		if _, ok := seqs[id]; ok {
			return named(cmd, id)
		}
		if star != nil {
			return *star
		}
		if s.Has(id) {
			return nntptest.Refuse
		}
		return nntptest.Want
	}, nil
}

// cmdClient connects to a server and plays the exchange in a file, printing
// every line sent ("C: ...") and received ("S: ...", blocks as on the wire,
// dot-stuffed, with their "." line) to stdout. The file's lines:
//
//	# comment           ignored (blank lines too)
//	C: LINE             send LINE and CRLF. After TAKETHIS, and after a 335/340
//	                    answer to IHAVE/POST, the C: lines up to "." are the
//	                    article, sent as written (so dot-stuff it yourself)
//	A: FILE             send FILE (native or wire form) as a dot-stuffed,
//	                    terminated block: the article of the pending TAKETHIS,
//	                    IHAVE or POST
//	S: PREFIX           read the next response (pipelined responses come in
//	                    order; the first is the greeting); its status line must
//	                    start with PREFIX (empty matches any); a multi-line
//	                    response's block is read whole. A 382 to STARTTLS starts
//	                    TLS.
//	S: EOF              the server must close the connection next
//	S: SILENT DURATION  nothing may arrive for DURATION (a hanging server)
//
// C: lines are buffered and sent when the next S: line needs a response, so
// consecutive C: lines are pipelined. It connects to $NNTP_ADDR, the server
// named by -server, or -addr; -tls speaks TLS from the start, trusting the
// in-script server's certificate or -ca FILE; -addrfile FILE connects to the
// listen= address of a newsfeed address file. ! nntpclient succeeds only if an
// expectation fails.
func cmdClient(ts *testscript.TestScript, neg bool, args []string) {
	fs := newFlags(ts, "nntpclient")
	name := fs.String("server", "", "in-script server name")
	addr := fs.String("addr", "", "host:port")
	useTLS := fs.Bool("tls", false, "implicit TLS")
	caFile := fs.String("ca", "", "PEM file to trust")
	addrFile := fs.String("addrfile", "", "newsfeed's address file (spool/newsfeed.addr): connect to its listen= address")
	if err := fs.Parse(args); err != nil {
		ts.Fatalf("nntpclient: %v", err)
	}
	if *addrFile != "" {
		for _, l := range strings.Split(ts.ReadFile(*addrFile), "\n") {
			if v, ok := strings.CutPrefix(l, "listen="); ok {
				*addr = strings.TrimSpace(v)
			}
		}
	}
	if fs.NArg() != 1 {
		ts.Fatalf("usage: nntpclient [-server NAME | -addr HOST:PORT] [-tls] [-ca FILE] FILE")
	}
	script := ts.ReadFile(fs.Arg(0))
	if *addr == "" {
		*addr = ts.Getenv(envName(*name, "ADDR"))
		if *addr == "" {
			ts.Fatalf("nntpclient: no address: start nntpserver or give -addr")
		}
	}
	cfg := &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	switch {
	case *caFile != "":
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(ts.ReadFile(*caFile))) {
			ts.Fatalf("nntpclient: no certificate in %s", *caFile)
		}
		cfg.RootCAs = pool
	case *addr == ts.Getenv(envName(*name, "ADDR")):
		st := scriptState(ts)
		st.mu.Lock()
		if s := st.servers[*name]; s != nil && s.CertPool() != nil {
			cfg.RootCAs = s.CertPool()
		}
		st.mu.Unlock()
	}
	var out bytes.Buffer
	err := play(&out, *addr, *useTLS, cfg, script, func(file string) []byte { return []byte(ts.ReadFile(file)) })
	ts.Stdout().Write(out.Bytes())
	switch {
	case neg && err == nil:
		ts.Fatalf("nntpclient: every expectation held")
	case !neg && err != nil:
		ts.Fatalf("nntpclient: %v", err)
	case err != nil:
		ts.Logf("nntpclient (expected to fail): %v", err)
	}
}

// exchange is the client side of one nntpclient run.
type exchange struct {
	out      io.Writer
	nc       net.Conn
	r        *bufio.Reader
	w        *bufio.Writer
	tls      *tls.Config
	pending  []string // verbs awaiting a response, oldest first; "" for the greeting
	inBlock  string   // when sending an article: the verb whose response follows it
	afterDot []string // verbs to queue when the article block ends
}

func play(out io.Writer, addr string, useTLS bool, cfg *tls.Config, script string, read func(string) []byte) error {
	nc, err := net.DialTimeout("tcp", addr, ioLimit)
	if err != nil {
		return err
	}
	defer nc.Close()
	if useTLS {
		tc := tls.Client(nc, cfg)
		tc.SetDeadline(time.Now().Add(ioLimit))
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("TLS: %w", err)
		}
		nc = tc
	}
	x := &exchange{out: out, nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc), tls: cfg, pending: []string{""}}
	for i, l := range strings.Split(script, "\n") {
		l = strings.TrimSuffix(l, "\r")
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		var err error
		switch {
		case strings.HasPrefix(l, "C:"):
			err = x.send(strings.TrimPrefix(strings.TrimPrefix(l, "C:"), " "))
		case strings.HasPrefix(l, "A:"):
			err = x.sendArticle(read(strings.TrimSpace(l[2:])))
		case strings.HasPrefix(l, "S:"):
			err = x.expect(strings.TrimPrefix(strings.TrimPrefix(l, "S:"), " "))
		default:
			err = fmt.Errorf("want C:, A:, S: or #")
		}
		if err != nil {
			return fmt.Errorf("line %d %q: %w", i+1, l, err)
		}
	}
	return x.w.Flush()
}

func (x *exchange) send(line string) error {
	fmt.Fprintf(x.out, "C: %s\n", line)
	x.w.WriteString(line + "\r\n")
	if x.inBlock != "" {
		if line == "." {
			x.pending = append(x.pending, x.inBlock)
			x.inBlock = ""
		}
		return nil
	}
	cmd, err := proto.ParseCommand([]byte(line))
	if err != nil {
		x.pending = append(x.pending, "")
		return nil
	}
	if cmd.Verb == "TAKETHIS" {
		x.inBlock = "TAKETHIS"
		return nil
	}
	x.pending = append(x.pending, cmd.Verb)
	return nil
}

func (x *exchange) sendArticle(art []byte) error {
	if x.inBlock == "" {
		return errors.New("no TAKETHIS, or 335/340 to IHAVE/POST, is waiting for an article")
	}
	if bytes.IndexByte(art, '\r') < 0 {
		art = bytes.ReplaceAll(art, []byte("\n"), []byte("\r\n"))
	}
	wire := proto.AppendBlock(nil, art)
	for _, l := range strings.SplitAfter(string(wire), "\n") {
		if l != "" {
			fmt.Fprintf(x.out, "C: %s\n", strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r"))
		}
	}
	x.w.Write(wire)
	x.pending = append(x.pending, x.inBlock)
	x.inBlock = ""
	return nil
}

func (x *exchange) readLine() (string, error) {
	x.nc.SetReadDeadline(time.Now().Add(ioLimit))
	l, err := x.r.ReadString('\n')
	if err != nil {
		if l != "" {
			fmt.Fprintf(x.out, "S~ %q\n", l)
		}
		return "", err
	}
	l = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
	fmt.Fprintf(x.out, "S: %s\n", l)
	return l, nil
}

func (x *exchange) expect(want string) error {
	if err := x.w.Flush(); err != nil {
		return err
	}
	switch {
	case want == "EOF":
		x.nc.SetReadDeadline(time.Now().Add(ioLimit))
		b, err := x.r.ReadByte()
		if err == nil {
			rest, _ := x.r.Peek(x.r.Buffered())
			return fmt.Errorf("got %q, want the connection closed", append([]byte{b}, rest...))
		}
		if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
			return fmt.Errorf("want the connection closed: %w", err)
		}
		fmt.Fprintf(x.out, "S! eof\n")
		return nil
	case strings.HasPrefix(want, "SILENT "):
		d, err := time.ParseDuration(strings.TrimPrefix(want, "SILENT "))
		if err != nil {
			return err
		}
		x.nc.SetReadDeadline(time.Now().Add(d))
		_, err = x.r.ReadByte()
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return fmt.Errorf("want silence for %v, got a byte or an error: %v", d, err)
		}
		fmt.Fprintf(x.out, "S! silent\n")
		return nil
	}
	verb := ""
	if len(x.pending) > 0 {
		verb, x.pending = x.pending[0], x.pending[1:]
	}
	l, err := x.readLine()
	if err != nil {
		return fmt.Errorf("reading the response to %s: %w", orGreeting(verb), err)
	}
	r, perr := proto.ParseResponse([]byte(l))
	if !strings.HasPrefix(l, want) {
		return fmt.Errorf("response to %s is %q, want it to start with %q", orGreeting(verb), l, want)
	}
	if perr != nil {
		return nil
	}
	if proto.MultiLine(verb, r.Code) {
		for {
			b, err := x.readLine()
			if err != nil {
				return fmt.Errorf("reading the block after %q: %w", l, err)
			}
			if b == "." {
				break
			}
		}
	}
	switch {
	case verb == "IHAVE" && r.Code == proto.CodeSendArticle, verb == "POST" && r.Code == proto.CodeSendPost:
		x.inBlock = verb
	case verb == "STARTTLS" && r.Code == proto.CodeContinueTLS:
		tc := tls.Client(x.nc, x.tls)
		tc.SetDeadline(time.Now().Add(ioLimit))
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("STARTTLS handshake: %w", err)
		}
		fmt.Fprintf(x.out, "! tls\n")
		x.nc, x.r, x.w = tc, bufio.NewReader(tc), bufio.NewWriter(tc)
	}
	return nil
}

func orGreeting(verb string) string {
	if verb == "" {
		return "the greeting"
	}
	return verb
}

// cmdCount asserts how many commands named VERB (a verb, or a full name
// such as MODE_STREAM or 'LIST ACTIVE'; see nntptest.Server.Count) the
// server received, on all connections or on -conn C; with -conns, how many
// connections it accepted. If fewer have arrived it waits up to 10 seconds
// for more (a program may still be sending), then requires exactly COUNT.
// ! nntpcount asserts the count is not COUNT, without waiting.
func cmdCount(ts *testscript.TestScript, neg bool, args []string) {
	fs := newFlags(ts, "nntpcount")
	name := fs.String("server", "", "in-script server name")
	conn := fs.Int("conn", 0, "connection number")
	conns := fs.Bool("conns", false, "count connections")
	if err := fs.Parse(args); err != nil {
		ts.Fatalf("nntpcount: %v", err)
	}
	s := server(ts, *name)
	var what string
	var get func() int
	switch {
	case *conns && fs.NArg() == 1:
		what, get = "connections", s.Conns
	case !*conns && fs.NArg() == 2:
		verb := strings.ToUpper(strings.ReplaceAll(fs.Arg(0), "_", " "))
		what = verb + " commands"
		get = func() int { return s.CountConn(*conn, verb) }
	default:
		ts.Fatalf("usage: nntpcount [-server NAME] [-conn C] VERB COUNT | nntpcount [-server NAME] -conns COUNT")
	}
	want, err := strconv.Atoi(fs.Arg(fs.NArg() - 1))
	ts.Check(err)
	if neg {
		if got := get(); got == want {
			ts.Fatalf("nntpcount: %d %s, want any other number", got, what)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioLimit)
	defer cancel()
	s.Await(ctx, func() bool { return get() >= want })
	if got := get(); got != want {
		ts.Fatalf("nntpcount: %d %s, want %d; commands received:\n%s", got, what, want, strings.Join(s.CommandLines(0), "\n"))
	}
}

// cmdFault adds a fault (nntptest.ParseFault syntax, one argument: quote it)
// to a running server, or with -clear removes them all.
func cmdFault(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! nntpfault")
	}
	fs := newFlags(ts, "nntpfault")
	name := fs.String("server", "", "in-script server name")
	clear := fs.Bool("clear", false, "remove every fault")
	if err := fs.Parse(args); err != nil {
		ts.Fatalf("nntpfault: %v", err)
	}
	s := server(ts, *name)
	switch {
	case *clear && fs.NArg() == 0:
		s.ClearFaults()
	case !*clear && fs.NArg() == 1:
		f, err := nntptest.ParseFault(fs.Arg(0))
		ts.Check(err)
		s.AddFault(f)
	default:
		ts.Fatalf("usage: nntpfault [-server NAME] SPEC | nntpfault [-server NAME] -clear")
	}
}

// cmdReceived prints the articles the server received through TAKETHIS,
// IHAVE and POST, one line each: "CMD <message-id> CODE" in arrival order.
// With -article ID it prints the last article received under that id, as
// received but with CRLF turned into LF (so cmp can compare it with a file in
// the script).
func cmdReceived(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! nntpreceived")
	}
	fs := newFlags(ts, "nntpreceived")
	name := fs.String("server", "", "in-script server name")
	article := fs.String("article", "", "message-id")
	if err := fs.Parse(args); err != nil {
		ts.Fatalf("nntpreceived: %v", err)
	}
	if fs.NArg() != 0 {
		ts.Fatalf("usage: nntpreceived [-server NAME] [-article ID]")
	}
	xs := server(ts, *name).Transfers()
	if *article == "" {
		for _, x := range xs {
			fmt.Fprintf(ts.Stdout(), "%s %s %d\n", x.Cmd, x.MessageID, x.Code)
		}
		return
	}
	for i := len(xs) - 1; i >= 0; i-- {
		if xs[i].MessageID == *article {
			ts.Stdout().Write(bytes.ReplaceAll(xs[i].Article, []byte("\r\n"), []byte("\n")))
			return
		}
	}
	ts.Fatalf("nntpreceived: no article %s received", *article)
}
