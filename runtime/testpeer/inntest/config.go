package inntest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// Options describes the private INN instance Start creates. The zero value
// is a streaming transit server for the group local.test that accepts feeds
// and readers from 127.0.0.1 without authentication.
type Options struct {
	// Groups are created in the active file (besides control, control.cancel
	// and junk). Empty means one group, local.test.
	Groups []Group
	// PathHost is INN's name in Path header fields; default
	// "inntestN.invalid" with N counting the instances of this process.
	PathHost string
	// NoStreaming turns off MODE STREAM, CHECK and TAKETHIS (incoming.conf
	// streaming: false), leaving IHAVE.
	NoStreaming bool
	// Reader starts a standalone nnrpd on a second port (see ReaderAddr).
	Reader bool
	// Peers may feed the server. Empty means one peer, "localhost", for
	// 127.0.0.1 and ::1 without password.
	Peers []Peer
	// Feeds are sites the server feeds articles out to.
	Feeds []Feed
	// Users, when not empty, makes nnrpd demand AUTHINFO USER/PASS before
	// reading or posting; any listed user with the right password gets in.
	Users []User
	// ChannelProgram is the command innd runs for the FeedChannel sites
	// (an absolute path, run as news; no shell quoting).
	ChannelProgram string
}

// Group is a newsgroup to create.
type Group struct {
	Name        string
	Description string // line in the newsgroups file; default "Test group."
	Flag        string // active file flag: "y" (default), "m", "n", "x", ...
}

// Peer is an incoming.conf peer: a host allowed to feed the server.
type Peer struct {
	Name     string   // peer label, also the name logged; must be unique
	Hosts    []string // addresses or names; default 127.0.0.1
	Password string   // feed-side AUTHINFO password, empty for none
}

// FeedKind selects how INN sends a Feed's articles out.
type FeedKind int

const (
	// FeedInnfeed sends articles as they arrive, through an innfeed channel
	// that innd starts itself (the usual INN transit setup).
	FeedInnfeed FeedKind = iota
	// FeedFile only writes "@token@ <msgid>" lines to a batch file in the
	// outgoing directory; Server.SendFileFeed sends them with innxmit.
	FeedFile
	// FeedChannel funnels the site into the channel "newsflow!", which
	// innd starts as Options.ChannelProgram ("Tc,Wnm*": lines
	// "@token@ <msgid> site..." on its standard input), in innfeed's place.
	// Addr is not used.
	FeedChannel
)

// Feed is a newsfeeds entry that feeds articles out to Addr.
type Feed struct {
	Name        string   // site name; also excluded by a Path containing it
	Addr        string   // host:port of the receiving server, loopback only
	Kind        FeedKind // default FeedInnfeed
	Patterns    string   // newsgroups patterns; default "*"
	Connections int      // innfeed max-connections; default 2
	NoStreaming bool     // feed with IHAVE instead of CHECK/TAKETHIS
	Flags       string   // more newsfeeds flags for a FeedFile site, comma-separated ("Q1-2/4")
}

// User is a reader account checked by nnrpd.
type User struct {
	Name, Password string
}

func (o Options) withDefaults() Options {
	if len(o.Groups) == 0 {
		o.Groups = []Group{{Name: "local.test"}}
	}
	if o.PathHost == "" {
		// Distinct names let instances feed each other: INN refuses an
		// article whose Path already holds its own name.
		o.PathHost = fmt.Sprintf("inntest%d.invalid", pathHostSeq.Add(1))
	}
	if len(o.Peers) == 0 {
		o.Peers = []Peer{{Name: "localhost", Hosts: []string{"localhost", "127.0.0.1", "::1"}}}
	}
	return o
}

// validate rejects options that would point INN away from loopback or
// produce a broken configuration.
func (o Options) validate() error {
	for _, g := range o.Groups {
		if g.Name == "" || strings.ContainsAny(g.Name, " \t\r\n") {
			return fmt.Errorf("inntest: bad group name %q", g.Name)
		}
	}
	names := map[string]bool{}
	for _, f := range o.Feeds {
		if f.Name == "" || strings.ContainsAny(f.Name, " \t:/!,") || names[f.Name] {
			return fmt.Errorf("inntest: bad or duplicate feed name %q", f.Name)
		}
		names[f.Name] = true
		if f.Kind == FeedChannel {
			if !strings.HasPrefix(o.ChannelProgram, "/") {
				return fmt.Errorf("inntest: feed %s: FeedChannel needs an absolute Options.ChannelProgram", f.Name)
			}
			continue
		}
		if _, err := loopbackPort(f.Addr); err != nil {
			return fmt.Errorf("inntest: feed %s: %w", f.Name, err)
		}
	}
	for _, p := range o.Peers {
		if p.Name == "" || strings.ContainsAny(p.Name, " \t{}\"") {
			return fmt.Errorf("inntest: bad peer name %q", p.Name)
		}
	}
	for _, u := range o.Users {
		if u.Name == "" || strings.ContainsAny(u.Name+u.Password, ":\r\n") {
			return fmt.Errorf("inntest: bad user %q (no ':' or line breaks)", u.Name)
		}
	}
	return nil
}

// loopbackPort checks that addr is host:port on a loopback address and
// returns the port. A name other than "localhost" is refused, since it could
// resolve anywhere.
func loopbackPort(addr string) (int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 0, fmt.Errorf("address %q is not on loopback", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		return 0, fmt.Errorf("address %q: bad port", addr)
	}
	return n, nil
}

// pathHostSeq numbers the default path host names.
var pathHostSeq atomic.Int64

// layout names the directories of one instance, all under dir.
type layout struct{ dir string }

func (l layout) path(parts ...string) string {
	return filepath.Join(append([]string{l.dir}, parts...)...)
}

func (l layout) etc() string      { return l.path("etc") }
func (l layout) db() string       { return l.path("db") }
func (l layout) run() string      { return l.path("run") }
func (l layout) log() string      { return l.path("log") }
func (l layout) spool() string    { return l.path("spool") }
func (l layout) outgoing() string { return l.path("spool", "outgoing") }
func (l layout) innconf() string  { return l.path("etc", "inn.conf") }

// dirs lists every directory the instance needs.
func (l layout) dirs() []string {
	return []string{
		l.etc(), l.path("etc", "filter"), l.db(), l.run(), l.log(), l.path("http"), l.path("tmp"),
		l.spool(), l.path("spool", "articles"), l.path("spool", "overview"),
		l.path("spool", "incoming"), l.path("spool", "incoming", "tmp"), l.outgoing(),
		l.path("spool", "archive"), l.path("spool", "innfeed"),
	}
}

// writeConfig writes inn.conf, the other etc files and the db files except
// the history, which makedbz creates.
func writeConfig(l layout, o Options, port int) error {
	for _, d := range l.dirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("inntest: %w", err)
		}
	}
	files := map[string]string{
		l.innconf():                            innConf(l, o, port),
		l.path("etc", "incoming.conf"):         incomingConf(o),
		l.path("etc", "newsfeeds"):             newsfeeds(o),
		l.path("etc", "readers.conf"):          readersConf(l, o),
		l.path("etc", "storage.conf"):          "method timehash {\n    newsgroups: *\n    class: 0\n}\n",
		l.path("etc", "expire.ctl"):            "/remember/:11\n*:A:1:90:never\n",
		l.path("etc", "inn-secrets.conf"):      "cancels {\n    canlockuser:  [ ]\n    canlockadmin: [ ]\n}\n",
		l.path("etc", "innfeed.conf"):          innfeedChannelConf(o),
		l.path("etc", "passwd.nntp"):           "",
		l.path("etc", "distrib.pats"):          "",
		l.path("etc", "distributions"):         "",
		l.path("etc", "moderators"):            "",
		l.path("etc", "control.ctl"):           "",
		l.path("etc", "control.ctl.local"):     "",
		l.path("etc", "localgroups"):           "",
		l.path("etc", "subscriptions"):         "",
		l.path("etc", "nnrpd.track"):           "",
		l.path("db", "active"):                 active(o),
		l.path("db", "active.times"):           activeTimes(o),
		l.path("db", "newsgroups"):             newsgroupsFile(o),
		l.path("db", "history"):                "",
		l.path("etc", "readers.users"):         readersUsers(o),
		l.path("etc", "readers.auth"):          readersAuthScript(l),
		l.path("log", "innd.out"):              "",
		l.path("log", "nnrpd.out"):             "",
		l.path("etc", "inntest-instance.note"): "Private INN instance made by newsflow's runtime/testpeer/inntest.\n",
	}
	for name, text := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "readers.auth") {
			mode = 0o755
		}
		if err := os.WriteFile(name, []byte(text), mode); err != nil {
			return fmt.Errorf("inntest: %w", err)
		}
	}
	return nil
}

// innConf is inn.conf: every path inside the instance, loopback only, and
// limits that suit tests (any article age and size).
func innConf(l layout, o Options, port int) string {
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "%s: %s\n", k, v) }
	kv("domain", "localdomain")
	kv("pathhost", o.PathHost)
	kv("server", "127.0.0.1")
	kv("port", strconv.Itoa(port))
	kv("bindaddress", "127.0.0.1")
	kv("sourceaddress", "127.0.0.1")
	kv("nnrpdpostport", strconv.Itoa(port))
	kv("organization", `"newsflow inntest"`)
	kv("mta", `"/bin/true %s"`)
	kv("mailcmd", "/bin/true")
	kv("pathnews", "/usr/lib/news")
	kv("pathbin", binDir)
	kv("pathcontrol", binDir+"/control")
	kv("pathfilter", l.path("etc", "filter"))
	kv("pathetc", l.etc())
	kv("pathdb", l.db())
	kv("pathrun", l.run())
	kv("pathlog", l.log())
	kv("pathhttp", l.path("http"))
	kv("pathtmp", l.path("tmp"))
	kv("pathspool", l.spool())
	kv("patharticles", l.path("spool", "articles"))
	kv("pathoverview", l.path("spool", "overview"))
	kv("pathincoming", l.path("spool", "incoming"))
	kv("pathoutgoing", l.outgoing())
	kv("patharchive", l.path("spool", "archive"))
	kv("ovmethod", "tradindexed")
	kv("hismethod", "hisv6")
	kv("enableoverview", "true")
	kv("wireformat", "true")
	kv("artcutoff", "0")
	kv("maxartsize", "0")
	kv("localmaxartsize", "0")
	kv("maxconnections", "0")
	kv("pgpverify", "false")
	kv("doinnwatch", "false")
	kv("docnfsstat", "false")
	kv("status", "0")
	kv("timer", "0")
	kv("logipaddr", "true")
	kv("logsitename", "true")
	kv("nnrpdloadlimit", "0")
	kv("readerswhenstopped", "true")
	kv("hiscachesize", "256")
	kv("msgidcachesize", "64000")
	kv("wipcheck", "5")
	kv("wipexpire", "10")
	kv("keywords", "false")
	kv("rlimitnofile", "-1")
	return b.String()
}

func incomingConf(o Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "streaming: %t\nmax-connections: 0\n", !o.NoStreaming)
	for _, p := range o.Peers {
		hosts := p.Hosts
		if len(hosts) == 0 {
			hosts = []string{"127.0.0.1"}
		}
		fmt.Fprintf(&b, "peer %s {\n  hostname: %q\n", p.Name, strings.Join(hosts, ", "))
		if p.Password != "" {
			fmt.Fprintf(&b, "  password: %q\n", p.Password)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// newsfeeds stores everything locally (ME) and adds one entry per Feed. An
// innfeed channel, "innfeed!", carries all FeedInnfeed sites.
func newsfeeds(o Options) string {
	var b strings.Builder
	b.WriteString("ME:*,!junk,!control*/!local::\n")
	channel, newsflow := false, false
	for _, f := range o.Feeds {
		pat := f.Patterns
		if pat == "" {
			pat = "*"
		}
		switch f.Kind {
		case FeedFile:
			flags := "Tf,Wnm"
			if f.Flags != "" {
				flags += "," + f.Flags
			}
			fmt.Fprintf(&b, "%s:%s:%s:\n", f.Name, pat, flags)
		case FeedChannel:
			fmt.Fprintf(&b, "%s:%s:Tm:newsflow!\n", f.Name, pat)
			newsflow = true
		default:
			fmt.Fprintf(&b, "%s:%s:Tm:innfeed!\n", f.Name, pat)
			channel = true
		}
	}
	if channel {
		fmt.Fprintf(&b, "innfeed!:!*:Tc,Wnm*:%s/innfeed\n", binDir)
	}
	if newsflow {
		fmt.Fprintf(&b, "newsflow!:!*:Tc,Wnm*:%s\n", o.ChannelProgram)
	}
	return b.String()
}

// innfeedChannelConf is the innfeed.conf read by the innfeed that innd
// starts for FeedInnfeed sites.
func innfeedChannelConf(o Options) string {
	var b strings.Builder
	b.WriteString(innfeedGlobals)
	for _, f := range o.Feeds {
		if f.Kind != FeedInnfeed {
			continue
		}
		host, _, _ := net.SplitHostPort(f.Addr)
		port, _ := loopbackPort(f.Addr)
		n := f.Connections
		if n <= 0 {
			n = 2
		}
		writeInnfeedPeer(&b, f.Name, host, port, 1, n, !f.NoStreaming, 0, 0, 0)
	}
	return b.String()
}

// innfeedGlobals are innfeed.conf settings shared by the channel and the
// standalone runner: no start-up pause, no DNS surprises, fast exits.
const innfeedGlobals = `initial-sleep: 0
backlog-ckpt-period: 1
backlog-newfile-period: 1
backlog-rotate-period: 1
stats-period: 60
dns-retry: 1
initial-reconnect-time: 1
max-reconnect-time: 5
article-timeout: 600
response-timeout: 60
dynamic-method: 0
force-ipv4: true
`

// writeInnfeedPeer writes one innfeed.conf peer block; zero queue and
// no-check values keep innfeed's defaults.
func writeInnfeedPeer(b *strings.Builder, name, host string, port, initial, max int, streaming bool, queue int, noCheckHigh, noCheckLow float64) {
	fmt.Fprintf(b, "peer %s {\n  ip-name: %s\n  port-number: %d\n", name, host, port)
	fmt.Fprintf(b, "  initial-connections: %d\n  max-connections: %d\n  streaming: %t\n", initial, max, streaming)
	if queue > 0 {
		fmt.Fprintf(b, "  max-queue-size: %d\n", queue)
	}
	if noCheckHigh > 0 {
		fmt.Fprintf(b, "  no-check-high: %.1f\n  no-check-low: %.1f\n", noCheckHigh, noCheckLow)
	}
	b.WriteString("}\n")
}

// readersConf lets 127.0.0.1 read and post everything; with Users it asks
// for AUTHINFO first, checked by the readers.auth program.
func readersConf(l layout, o Options) string {
	if len(o.Users) == 0 {
		return `auth "localhost" {
    hosts: "localhost, 127.0.0.1, ::1, stdin"
    default: "<localhost>"
}
access "localhost" {
    users: "<localhost>"
    newsgroups: "*"
    access: RPA
}
`
	}
	return fmt.Sprintf(`auth "users" {
    hosts: "localhost, 127.0.0.1, ::1, stdin"
    auth: %q
}
access "users" {
    users: "*"
    newsgroups: "*"
    access: RPA
}
`, l.path("etc", "readers.auth"))
}

// readersUsers holds the accounts, "name:password" per line, read by the
// readers.auth program.
func readersUsers(o Options) string {
	var b strings.Builder
	for _, u := range o.Users {
		fmt.Fprintf(&b, "%s:%s\n", u.Name, u.Password)
	}
	return b.String()
}

// readersAuthScript is an nnrpd authenticator (INN's external-auth
// protocol): it reads "ClientAuthname: u" and "ClientPassword: p" lines up to
// ".", and answers "User:u" with exit 0 when the pair is in readers.users.
func readersAuthScript(l layout) string {
	return `#!/bin/sh
# nnrpd authenticator written by newsflow's runtime/testpeer/inntest.
user= pass=
while IFS= read -r line; do
  line=$(printf '%s' "$line" | tr -d '\r')
  case "$line" in
    .) break ;;
    "ClientAuthname: "*) user=${line#ClientAuthname: } ;;
    "ClientPassword: "*) pass=${line#ClientPassword: } ;;
  esac
done
[ -n "$user" ] || exit 1
while IFS= read -r entry; do
  if [ "$entry" = "$user:$pass" ]; then
    printf 'User:%s\r\n' "$user"
    exit 0
  fi
done < '` + l.path("etc", "readers.users") + `'
exit 1
`
}

func active(o Options) string {
	var b strings.Builder
	for _, g := range []string{"control", "control.cancel", "junk"} {
		fmt.Fprintf(&b, "%s 0000000000 0000000001 n\n", g)
	}
	for _, g := range o.Groups {
		flag := g.Flag
		if flag == "" {
			flag = "y"
		}
		fmt.Fprintf(&b, "%s 0000000000 0000000001 %s\n", g.Name, flag)
	}
	return b.String()
}

func activeTimes(o Options) string {
	var b strings.Builder
	for _, g := range o.Groups {
		fmt.Fprintf(&b, "%s 1700000000 inntest\n", g.Name)
	}
	return b.String()
}

func newsgroupsFile(o Options) string {
	var b strings.Builder
	for _, g := range o.Groups {
		d := g.Description
		if d == "" {
			d = "Test group."
		}
		fmt.Fprintf(&b, "%s\t%s\n", g.Name, d)
	}
	return b.String()
}
