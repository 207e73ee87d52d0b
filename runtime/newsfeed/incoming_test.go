package newsfeed

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"
)

// writeTestCert writes a self-signed certificate for 127.0.0.1 and its key
// into dir and returns their file names and a pool that trusts it.
func writeTestCert(t testing.TB, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "relay.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// writeUsers writes an htpasswd file with bcrypt hashes.
func writeUsers(t testing.TB, dir string, users ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# user:bcrypt, as htpasswd -B writes them\n")
	for i := 0; i < len(users); i += 2 {
		h, err := bcrypt.GenerateFromPassword([]byte(users[i+1]), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%s\n", users[i], h)
	}
	name := filepath.Join(dir, "ingest.passwd")
	if err := os.WriteFile(name, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// startTLS upgrades the client after 382.
func (ic *ingestClient) startTLS(pool *x509.CertPool) {
	ic.t.Helper()
	if r := ic.cmd("STARTTLS"); !strings.HasPrefix(r, "382") {
		ic.t.Fatalf("STARTTLS: %q", r)
	}
	tc := tls.Client(ic.c, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err := tc.Handshake(); err != nil {
		ic.t.Fatalf("TLS handshake: %v", err)
	}
	ic.c, ic.br = tc, bufio.NewReader(tc)
}

// login sends AUTHINFO USER/PASS and returns the last response.
func (ic *ingestClient) login(user, pass string) string {
	if r := ic.cmd("AUTHINFO USER " + user); !strings.HasPrefix(r, "381") {
		return r
	}
	return ic.cmd("AUTHINFO PASS " + pass)
}

// wantCode fails the test unless response got starts with code.
func wantCode(t *testing.T, what, got, code string) {
	t.Helper()
	if !strings.HasPrefix(got, code) {
		t.Errorf("%s: got %q, want %s", what, got, code)
	}
}

// TestIngestAuthTLSIncoming: with ingest_users, tls_cert and tls_required,
// a feeder must STARTTLS (or use listen_tls) and log in before it feeds;
// its [[incoming]] entry bounds its connections and its groups; artcutoff
// refuses old articles; failed logins are rate-limited per address.
func TestIngestAuthTLSIncoming(t *testing.T) { forRuntimes(t, testIngestAuthTLSIncoming) }

func testIngestAuthTLSIncoming(t *testing.T, rt string) {
	dir := t.TempDir()
	certFile, keyFile, pool := writeTestCert(t, dir)
	users := writeUsers(t, dir, "up1", "s3cret", "up2", "other")
	text := fmt.Sprintf(`ingest_users = %q
tls_cert = %q
tls_key = %q
listen_tls = "127.0.0.1:0"
tls_required = true
artcutoff = "10d"

[[incoming]]
name = "upstream1"
user = "up1"
max_connections = 1
groups = ["*", "!alt.binaries.*"]
`, users, certFile, keyFile)
	h := startRelay(t, relayConfigRT(t, rt, filepath.Join(dir, "spool"), text), nil)

	c := dialIngest(t, h.r.Addr().String())
	wantCode(t, "CHECK before AUTHINFO", c.cmd("CHECK <a@t>"), "480")
	wantCode(t, "AUTHINFO in the clear", c.cmd("AUTHINFO USER up1"), "483")
	c.startTLS(pool)
	wantCode(t, "wrong password", c.login("up1", "wrong"), "481")
	wantCode(t, "good password", c.login("up1", "s3cret"), "281")

	old := testArticle("<old@t>", "misc.test", "up!x", 2)
	old = []byte(strings.Replace(string(old), "Date: ", "Date: Mon, 01 Jan 2001 00:00:00 +0000\nX-Was-Date: ", 1))
	got := c.takethis(map[string][]byte{
		"<old@t>":  old,
		"<bin@t>":  testArticle("<bin@t>", "alt.binaries.test", "up!x", 2),
		"<good@t>": testArticle("<good@t>", "misc.test", "up!x", 2),
	})
	want := map[string]string{"<old@t>": "439", "<bin@t>": "439", "<good@t>": "239"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("TAKETHIS answers %v, want %v", got, want)
	}
	// A refused group does not poison the id for other feeders.
	wantCode(t, "CHECK of the refused binary", c.cmd("CHECK <bin@t>"), "238")

	// listen_tls: encrypted from the first byte; up1 has its one
	// connection already, up2 matches no entry.
	dialTLS := func() *ingestClient {
		tc, err := tls.Dial("tcp", h.r.TLSAddr().String(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tc.Close() })
		ic := &ingestClient{t: t, c: tc, br: bufio.NewReader(tc)}
		wantCode(t, "greeting on listen_tls", ic.line(), "200")
		return ic
	}
	s := dialTLS()
	wantCode(t, "STARTTLS inside TLS", s.cmd("STARTTLS"), "502")
	wantCode(t, "a second connection for up1", s.login("up1", "s3cret"), "481 Too many connections")
	wantCode(t, "closed after that", s.line(), "")
	s = dialTLS()
	wantCode(t, "up2 on listen_tls", s.login("up2", "other"), "281")
	if got := s.takethis(map[string][]byte{"<bin2@t>": testArticle("<bin2@t>", "alt.binaries.test", "up!x", 2)}); got["<bin2@t>"] != "239" {
		t.Errorf("up2 (no [[incoming]] entry) sending alt.binaries: %v, want 239", got)
	}

	// Failed logins from 127.0.0.1: one above, four more use up the
	// burst, and the next connection is refused without a check.
	for i := range authBurst - 1 {
		f := dialTLS()
		wantCode(t, fmt.Sprintf("failure %d", i+2), f.login("up1", "guess"), "481")
	}
	f := dialTLS()
	wantCode(t, "blocked address", f.login("up2", "other"), "481 Too many authentication failures")
	if n := h.r.auth.failed.Load(); n != authBurst {
		t.Errorf("failed logins counted %d, want %d", n, authBurst)
	}
	if n := h.r.auth.blocked.Load(); n != 1 {
		t.Errorf("blocked logins counted %d, want 1", n)
	}
	// The operator sees them: in the status and in /metrics.
	if st := h.r.Status().Ingest; st.AuthFailed != authBurst || st.AuthBlocked != 1 {
		t.Errorf("status: auth_failed %d auth_blocked %d, want %d and 1", st.AuthFailed, st.AuthBlocked, authBurst)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&collector{r: h.r})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	authMetric := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "newsfeed_ingest_auth_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			authMetric[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	if want := map[string]float64{"failed": authBurst, "blocked": 1}; !maps.Equal(authMetric, want) {
		t.Errorf("newsfeed_ingest_auth_refused_total = %v, want %v", authMetric, want)
	}
}

// TestIncomingConfigErrors: each mistake in the new keys is reported at
// its line and key.
func TestIncomingConfigErrors(t *testing.T) {
	in := "spool = \"/s\"\ningest_users = \"/u\"\n[[incoming]]\nname = \"a\"\n"
	tests := []struct{ name, text, want string }{
		{"cert without key", "spool=\"/s\"\ntls_cert = \"/c\"\n", "f.toml:2: tls_cert: tls_cert and tls_key go together"},
		{"listen_tls without cert", "spool=\"/s\"\nlisten_tls = \"127.0.0.1:563\"\n", "f.toml:2: listen_tls: needs tls_cert and tls_key"},
		{"tls_required without cert", "spool=\"/s\"\ntls_required = true\n", "f.toml:2: tls_required: needs tls_cert and tls_key"},
		{"bad listen_tls", "spool=\"/s\"\ntls_cert=\"/c\"\ntls_key=\"/k\"\nlisten_tls = \"x\"\n", "f.toml:4: listen_tls: \"x\" is not host:port"},
		{"bad artcutoff", "spool=\"/s\"\nartcutoff = \"soon\"\n", "f.toml:2: artcutoff: bad duration"},
		{"no name", "spool=\"/s\"\n[[incoming]]\nhosts = [\"::1\"]\n", "f.toml:2: incoming[1]: incoming entry without a name"},
		{"matches nothing", in, "f.toml:3: incoming[1]: incoming entry \"a\" matches nothing"},
		{"user without users file", "spool=\"/s\"\n[[incoming]]\nname = \"a\"\nuser = \"u\"\n", "f.toml:4: incoming[1].user: needs ingest_users"},
		{"bad host", in + "hosts = [\"nowhere\"]\n", "f.toml:5: incoming[1].hosts[1]: \"nowhere\" is not an address"},
		{"negative max", in + "user = \"u\"\nmax_connections = -1\n", "f.toml:6: incoming[1].max_connections: must be 0"},
		{"bad groups", in + "user = \"u\"\ngroups = [\"\"]\n", "f.toml:6: incoming[1].groups:"},
		{"duplicate", in + "user = \"u\"\n[[incoming]]\nname = \"a\"\nuser = \"v\"\n", "f.toml:7: incoming[2].name: duplicate incoming name \"a\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("f.toml", []byte(tc.text))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error:\n%v\nwant prefix:\n%s", err, tc.want)
			}
		})
	}
}

// TestIncomingHostsAllowed: an [[incoming]] entry's hosts are allowed and
// name the connection's feeder; other allowed addresses have none.
func TestIncomingHostsAllowed(t *testing.T) {
	cfg, err := ParseConfig("f.toml", []byte("spool=\"/s\"\nallow = [\"127.0.0.0/8\"]\n[[incoming]]\nname = \"up\"\nhosts = [\"192.0.2.7\", \"2001:db8::/32\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{cfg: cfg}
	for _, in := range cfg.Incoming {
		r.auth.feeders = append(r.auth.feeders, &feeder{cfg: &in})
	}
	for _, tc := range []struct {
		addr    string
		allowed bool
		feeder  string
	}{{"192.0.2.7", true, "up"}, {"::ffff:192.0.2.7", true, "up"}, {"2001:db8::5", true, "up"}, {"127.0.0.1", true, ""}, {"192.0.2.8", false, ""}} {
		a := netip.MustParseAddr(tc.addr)
		name := ""
		if f := r.feederByAddr(a); f != nil {
			name = f.cfg.Name
		}
		if cfg.Allowed(a) != tc.allowed || name != tc.feeder {
			t.Errorf("%s: allowed %v feeder %q, want %v %q", tc.addr, cfg.Allowed(a), name, tc.allowed, tc.feeder)
		}
	}
}

// TestFailLimiter: authBurst failures block an address; it is let in
// again as tokens refill, and other addresses are not affected.
func TestFailLimiter(t *testing.T) {
	var l failLimiter
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	t0 := time.Unix(1e9, 0)
	for i := range authBurst {
		if !l.allow(a, t0) {
			t.Fatalf("blocked after %d failures", i)
		}
		if blocked := l.fail(a, t0); blocked != (i == authBurst-1) {
			t.Fatalf("failure %d: blocked %v", i+1, blocked)
		}
	}
	if l.allow(a, t0) || !l.allow(b, t0) {
		t.Errorf("allow(a) %v allow(b) %v, want false true", l.allow(a, t0), l.allow(b, t0))
	}
	if !l.allow(a, t0.Add(authRefill)) {
		t.Error("still blocked after one refill period")
	}
	for i := range authAddrs + 10 {
		l.fail(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), t0)
	}
	if len(l.m) > authAddrs {
		t.Errorf("%d addresses remembered, limit %d", len(l.m), authAddrs)
	}
}

// FuzzParseUsers: the htpasswd parser never panics, and what it takes are
// non-empty users with bcrypt hashes.
func FuzzParseUsers(f *testing.F) {
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	for _, s := range []string{"up1:" + string(h) + "\n", "# comment\n\nup1:" + string(h), "up1:$apr1$x$y\n", ":x", "a:b:c", "up1:" + string(h) + "\nup1:" + string(h)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		users, err := parseUsers(b)
		if err != nil {
			return
		}
		for u, hash := range users {
			if u == "" || strings.ContainsAny(u, ":\n") {
				t.Fatalf("user %q taken", u)
			}
			if _, err := bcrypt.Cost(hash); err != nil {
				t.Fatalf("user %q: hash %q taken: %v", u, hash, err)
			}
		}
	})
}
