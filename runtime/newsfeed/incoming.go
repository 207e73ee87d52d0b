package newsfeed

// The ingest listener's access rules, INN incoming.conf style: who may feed
// us, with what credentials, over what, how many connections and which
// groups.
//
//   - allow (config.go) is the address gate; the hosts of every [[incoming]]
//     entry are allowed too.
//   - ingest_users names an htpasswd file (user:bcrypt-hash lines, as
//     Apache's htpasswd -B writes them). When it is set every connection
//     must authenticate (AUTHINFO USER/PASS, RFC 4643) before it feeds:
//     machine/ingest answers 480 until then, hands the password out in an
//     Auth event, and auth.go checks it here, off the connection's
//     goroutine (bcrypt costs tens of milliseconds of CPU; at most
//     authWorkers run at once), failures counted and rate-limited per
//     address.
//   - tls_cert/tls_key offer STARTTLS on listen and enable listen_tls,
//     a listener that is encrypted from the first byte. crypto/tls needs a
//     net.Conn, so with TLS configured every ingest connection runs on the
//     goroutine runtime even when runtime = "epoll" (the start log says so).
//     tls_required refuses AUTHINFO on connections not encrypted (483).
//   - artcutoff refuses articles whose Date is older than now minus it, or
//     more than a day in the future (437/439), as INN's artcutoff does;
//     without it the relay passes any Date, as before.
//   - [[incoming]] entries name feeders by address (hosts, CIDR prefixes)
//     or by the user they authenticate as. A connection belongs to the
//     first entry whose hosts hold its address, and, once it has
//     authenticated, to the entry naming its user, if any. An entry bounds
//     its open connections (max_connections; beyond it a connection gets
//     "400 Too many connections for feeder X", or 481 and close after
//     AUTHINFO) and the groups it may send us (groups, newsfeeds patterns:
//     an article none of whose groups is allowed, or one in a group
//     poisoned with "@", is refused with 439/437 "Group not allowed for
//     this feeder"). A connection that matches no entry is bound by the
//     global limits only.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/machine/ingest"
	"github.com/newsflow/newsflow/proto"
)

// IncomingConfig is one [[incoming]] entry: a feeder and its rules.
type IncomingConfig struct {
	Name           string   `toml:"name"`            // names the feeder in logs
	Hosts          []string `toml:"hosts"`           // addresses or CIDR prefixes it connects from
	User           string   `toml:"user"`            // or the ingest_users name it authenticates as
	MaxConnections int      `toml:"max_connections"` // its open connections at most (0: no own limit)
	Groups         []string `toml:"groups"`          // newsfeeds patterns of what it may send (default ["*"])

	hosts    []netip.Prefix
	patterns proto.GroupPatterns
}

// checkIncoming checks the TLS, authentication and [[incoming]] keys, and
// adds the entries' hosts to the allowed prefixes (checkAllow runs first).
func (c *Config) checkIncoming() []error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, c.errAt(key, format, args...)) }
	if (c.TLSCert == "") != (c.TLSKey == "") {
		add("tls_cert", "tls_cert and tls_key go together (got only one)")
	}
	if c.TLSCert == "" {
		if c.ListenTLS != "" {
			add("listen_tls", "needs tls_cert and tls_key")
		}
		if c.TLSRequired {
			add("tls_required", "needs tls_cert and tls_key")
		}
	}
	if c.ListenTLS != "" {
		if err := c.checkHostPort("listen_tls", c.ListenTLS); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ArtCutoff < 0 {
		add("artcutoff", "must not be negative (got %s)", c.ArtCutoff.D())
	}
	seen := map[string]int{}
	for i := range c.Incoming {
		pre := "incoming[" + strconv.Itoa(i+1) + "]."
		in := &c.Incoming[i]
		if in.Name == "" {
			add(strings.TrimSuffix(pre, "."), "incoming entry without a name")
		} else if j, dup := seen[in.Name]; dup {
			add(pre+"name", "duplicate incoming name %q (also incoming[%d])", in.Name, j)
		} else {
			seen[in.Name] = i + 1
		}
		if len(in.Hosts) == 0 && in.User == "" {
			add(strings.TrimSuffix(pre, "."), "incoming entry %q matches nothing: give hosts or user", in.Name)
		}
		if in.User != "" && c.IngestUsers == "" {
			add(pre+"user", "needs ingest_users (users authenticate against it)")
		}
		in.hosts = in.hosts[:0]
		for j, h := range in.Hosts {
			p, err := parseAllow(h)
			if err != nil {
				errs = append(errs, &ConfigError{File: c.Source, Line: c.keys.Line(pre + "hosts"),
					Key: pre + "hosts[" + strconv.Itoa(j+1) + "]", Msg: err.Error()})
				continue
			}
			in.hosts = append(in.hosts, p)
			c.allowed = append(c.allowed, p)
		}
		if in.MaxConnections < 0 {
			add(pre+"max_connections", "must be 0 (no own limit) or more (got %d)", in.MaxConnections)
		}
		if !c.Has(pre + "groups") {
			in.Groups = []string{"*"}
		}
		pats, err := proto.ParseGroupPatterns(in.Groups)
		if err != nil {
			add(pre+"groups", "%v", err)
		}
		in.patterns = pats
	}
	return errs
}

// feeder is an [[incoming]] entry at run time: its open connections are
// counted under the relay's limits.mu.
type feeder struct {
	cfg  *IncomingConfig
	open int
}

// feederByAddr is the first entry whose hosts hold addr; nil when none.
func (r *Relay) feederByAddr(addr netip.Addr) *feeder {
	addr = addr.Unmap().WithZone("")
	for _, f := range r.auth.feeders {
		if slices.ContainsFunc(f.cfg.hosts, func(p netip.Prefix) bool { return p.Contains(addr) }) {
			return f
		}
	}
	return nil
}

// feederByUser is the entry naming user; nil when none.
func (r *Relay) feederByUser(user string) *feeder {
	for _, f := range r.auth.feeders {
		if f.cfg.User != "" && f.cfg.User == user {
			return f
		}
	}
	return nil
}

// joinFeeder moves ic to f (nil: none), counting it in, or returns why f
// has no room for it.
func (r *Relay) joinFeeder(ic *inConn, f *feeder) string {
	l := &r.limits
	l.mu.Lock()
	defer l.mu.Unlock()
	if f == ic.feeder {
		return ""
	}
	if f != nil && f.cfg.MaxConnections > 0 && f.open >= f.cfg.MaxConnections {
		return "Too many connections for feeder " + f.cfg.Name
	}
	if ic.feeder != nil {
		ic.feeder.open--
	}
	if f != nil {
		f.open++
	}
	ic.feeder = f
	return ""
}

// groupsRefused returns why the connection's feeder may not send an
// article with this header, "" when it may.
func (ic *inConn) groupsRefused(h proto.Header) string {
	f := ic.feeder
	if f == nil {
		return ""
	}
	groups, _ := h.Newsgroups()
	if f.cfg.patterns.WantsGroups(groups) {
		return ""
	}
	return "Group not allowed for this feeder"
}

// loadTLS reads the certificate and key when they are configured.
func loadTLS(c *Config) (*tls.Config, error) {
	if c.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("relay: tls_cert %s, tls_key %s: %w", c.TLSCert, c.TLSKey, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// maxFuture is the ingest machines' MaxFuture: with artcutoff set, INN's
// default of a day ahead (0); without it no Date check at all (-1), since
// a relay passes what its upstream accepted.
func (r *Relay) maxFuture() time.Duration {
	if r.cfg.ArtCutoff > 0 {
		return 0
	}
	return -1
}

// refuseArticle answers an article the feeder may not send: 439/437 with
// why, and its reservation released (another feeder may send it).
func (ic *inConn) refuseArticle(now time.Time, e ingest.Article, why string) {
	r := ic.r
	r.auth.groups.Add(1)
	r.ingest.rejected.Add(1)
	r.spool.History().Release(e.MessageID)
	r.log.Info("article rejected", "remote", ic.remote, "feeder", ic.feederName(), "id", e.MessageID, "reason", why)
	if err := ic.g.Stored(now, e.Seq, ingest.Result{Outcome: ingest.StoreRejected, Reason: why}); err != nil {
		r.log.Error("ingest stored", "err", err)
	}
}

// listenTLS opens listen_tls (under r.mu).
func (r *Relay) listenTLS() error {
	if r.cfg.ListenTLS == "" {
		return nil
	}
	ln, err := net.Listen("tcp", r.cfg.ListenTLS)
	if err != nil {
		return fmt.Errorf("relay: listen_tls: %w", err)
	}
	r.lnTLS = tls.NewListener(ln, r.auth.tls)
	return nil
}

// TLSAddr returns the listen_tls listener's address, nil when there is none.
func (r *Relay) TLSAddr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lnTLS == nil {
		return nil
	}
	return r.lnTLS.Addr()
}

// serveTLSListener runs the accept loop of listen_tls; the channel closes
// when it ends (at once when there is none).
func (r *Relay) serveTLSListener(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	r.mu.Lock()
	ln := r.lnTLS
	r.mu.Unlock()
	if ln == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		r.acceptLoop(ctx, ln)
	}()
	return done
}

func (r *Relay) closeTLSListener() {
	if r.lnTLS != nil {
		r.lnTLS.Close()
	}
}
