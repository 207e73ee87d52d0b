package newsweb

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/testpeer/logbuf"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// The TLS policy: TLS first, required with credentials, plain
// TCP as the fallback otherwise; the transport used is counted.
func TestTLSPolicy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		server    nntptest.TLSMode
		mode      TLSMode
		creds     bool
		trust     bool
		transport string // "" means the connection must fail with ErrTLSRequired
	}{
		{"starttls offered", nntptest.StartTLS, TLSStartTLS, false, true, TransportStartTLS},
		{"starttls with credentials", nntptest.StartTLS, TLSStartTLS, true, true, TransportStartTLS},
		{"implicit", nntptest.ImplicitTLS, TLSImplicit, false, true, TransportTLS},
		{"implicit with credentials", nntptest.ImplicitTLS, TLSImplicit, true, true, TransportTLS},
		{"no TLS offered", nntptest.NoTLS, TLSStartTLS, false, true, TransportPlain},
		{"no TLS offered, credentials", nntptest.NoTLS, TLSStartTLS, true, true, ""},
		{"implicit refused, falls back", nntptest.NoTLS, TLSImplicit, false, true, TransportPlain},
		{"implicit refused, credentials", nntptest.NoTLS, TLSImplicit, true, true, ""},
		{"starttls untrusted, falls back", nntptest.StartTLS, TLSStartTLS, false, false, TransportPlain},
		{"starttls untrusted, credentials", nntptest.StartTLS, TLSStartTLS, true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := nntptest.Options{TLS: tc.server}
			if tc.creds {
				opts.Auth = &nntptest.Auth{User: "alice", Pass: "secret"}
			}
			srv := nntptest.Start(t, opts)
			srv.AddGroup(nntptest.Group{Name: "misc.test"})
			cfg := ServerConfig{Addr: srv.HostPort(), TLS: tc.mode, Connections: 1}
			if tc.trust && tc.server != nntptest.NoTLS {
				cfg.TLSConfig = srv.ClientTLSConfig()
			} else {
				cfg.TLSConfig = &tls.Config{ServerName: "untrusted.invalid"} // system roots do not know nntptest's CA
			}
			if tc.creds {
				cfg.User, cfg.Pass = "alice", "secret"
			}
			m := NewMetrics(prometheus.NewRegistry())
			s := service(t, cfg, nil, m)
			_, err := s.Do(context.Background(), mreader.GetGroups{})
			if tc.transport == "" {
				if !errors.Is(err, ErrTLSRequired) {
					t.Fatalf("got %v, want ErrTLSRequired", err)
				}
				if n := srv.Count("AUTHINFO"); n != 0 {
					t.Errorf("credentials sent without TLS (%d AUTHINFO)", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, tr := range []string{TransportTLS, TransportStartTLS, TransportPlain} {
				if v := testutil.ToFloat64(m.Connections.WithLabelValues(s.Name(), tr)); v > 0 {
					got[tr] = v
				}
			}
			if d := cmp.Diff(map[string]float64{tc.transport: 1}, got); d != "" {
				t.Errorf("connections by transport (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseServerURL(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    ServerConfig
		wantErr bool
	}{
		{in: "nntp://news.example", want: ServerConfig{Addr: "news.example:119"}},
		{in: "nntps://news.example", want: ServerConfig{Addr: "news.example:563", TLS: TLSImplicit}},
		{in: "nntp://127.0.0.1:1119/?priority=2&connections=8", want: ServerConfig{Addr: "127.0.0.1:1119", Priority: 2, Connections: 8}},
		{in: "nntps://bob:p%40ss@[::1]:5630?name=backup", want: ServerConfig{Addr: "[::1]:5630", TLS: TLSImplicit, User: "bob", Pass: "p@ss", Name: "backup"}},
		{in: "http://news.example", wantErr: true},
		{in: "nntp://", wantErr: true},
		{in: "nntp://news.example/misc.test", wantErr: true},
		{in: "nntp://news.example?prio=1", wantErr: true},
		{in: "nntp://news.example?connections=0", wantErr: true},
		{in: "nntp://news.example?priority=high", wantErr: true},
		{in: "nntp://:pw@news.example", wantErr: true},
	} {
		got, err := ParseServerURL(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseServerURL(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseServerURL(%q): %v", tc.in, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("ParseServerURL(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

// A server URL's errors say how to write it, and never show its password.
func TestParseServerURLErrors(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:119":                         "write it as nntp://127.0.0.1:119 (nntps:// for TLS)",
		"news.example":                          "write it as nntp://news.example",
		"nntp://bob:secret@news.example?prio=1": `unknown parameter "prio"`,
		"nntp://bob:secret@news.example/group":  "unexpected path",
		"http://bob:secret@news.example":        "scheme must be nntp:// or nntps://",
	} {
		_, err := ParseServerURL(in)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseServerURL(%q): %v; want it to say %q, without the password", in, err, want)
		}
	}
}

// A server that refuses connections is named once, by its name and
// address, with the system's reason: the log says "news2 (ADDR):
// connection refused", not the dial's own "dial ADDR: dial tcp ADDR:
// connect: ..."; the page says the servers did not answer, without the
// address.
func TestDialErrorSaidOnce(t *testing.T) {
	addr := deadAddr(t)
	logs := &logbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	svc := NewService(ServerConfig{Name: "news2", Addr: addr, Connections: 1}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	srv := newFrontServer(t, New(fed, Options{Logger: log}))
	t.Cleanup(func() { srv.Close(); fed.Close() })

	resp, page := get(t, srv.URL+"/")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(page, "None of the news servers behind this site answered") || strings.Contains(page, addr) {
		t.Errorf("page: %d, want 502 saying the servers did not answer, without the address:\n%s", resp.StatusCode, clip(page))
	}
	want := "news2 (" + addr + "): connection refused"
	got := logs.String()
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if !strings.Contains(line, "err=") {
			continue
		}
		if !strings.Contains(line, want) || strings.Count(line, addr) != 1 || strings.Contains(line, "dial") {
			t.Errorf("log line %q: want %q in it, the address once and no dial steps", line, want)
		}
	}
	if !strings.Contains(got, `msg="request failed" path=/ status=502 err="reader: group list: no news server could answer: `+want+`"`) {
		t.Errorf("the failed request's log line does not end with %q:\n%s", want, got)
	}
}

// dialReason keeps what went wrong and drops the address and the steps
// that driver.Dial and net add.
func TestDialReason(t *testing.T) {
	const addr = "news.example:119"
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&driver.DialError{Step: "dial", Addr: addr, Err: refused}, "connection refused"},
		{&driver.DialError{Step: "dial", Addr: addr, Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "news.example", IsNotFound: true}}},
			"lookup news.example: no such host"},
		{&driver.DialError{Step: "dial", Addr: addr, Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}}, "timed out"},
		{&driver.DialError{Step: "tls", Addr: addr, Err: errors.New("tls: failed to verify certificate: x509: certificate signed by unknown authority")},
			"TLS handshake: failed to verify certificate: x509: certificate signed by unknown authority"},
		{&driver.DialError{Step: "tls", Addr: addr, Err: context.DeadlineExceeded}, "TLS handshake: timed out"},
	} {
		if got := dialReason(tc.err); got != tc.want {
			t.Errorf("dialReason(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
