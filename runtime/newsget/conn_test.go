package newsget

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// TestTLS: a self-signed certificate is refused with verification on
// (the run stops with a message that says how to accept it), accepted with
// cert_verification = false, and verified with ca_file; for TLS from the
// first byte and for STARTTLS.
func TestTLS(t *testing.T) {
	p := newPosting("t.bin", 11, 7000, 3000)
	for _, mode := range []struct {
		name string
		tls  nntptest.TLSMode
		enc  string
	}{{"implicit", nntptest.ImplicitTLS, EncryptTLS}, {"starttls", nntptest.StartTLS, EncryptStartTLS}} {
		for _, v := range []struct {
			name     string
			verify   bool
			ca       bool
			complete bool
		}{{"verify on", true, false, false}, {"verify off", false, false, true}, {"ca_file", true, true, true}} {
			t.Run(mode.name+"/"+v.name, func(t *testing.T) {
				s := nntptest.Start(t, nntptest.Options{TLS: mode.tls})
				serve(t, s, nil, p)
				c := server(s, "s1")
				c.Encryption = mode.enc
				c.CertVerification = &v.verify
				if v.ca {
					ca := filepath.Join(t.TempDir(), "ca.pem")
					if err := os.WriteFile(ca, s.CertPEM(), 0o644); err != nil {
						t.Fatal(err)
					}
					c.CAFile = ca
				}
				r := newRun(t, c)
				sum := r.run(t, poster.NZB(p))
				if sum.Complete() != v.complete {
					t.Fatalf("complete = %v, want %v: %v %s", sum.Complete(), v.complete, results(sum), sum.Fatal)
				}
				if !v.complete {
					if !strings.Contains(sum.Fatal, "certificate verification failed") || !strings.Contains(sum.Fatal, "cert_verification = false") {
						t.Errorf("message does not say why or how: %q", sum.Fatal)
					}
					if n := s.Count("BODY"); n != 0 {
						t.Errorf("%d BODY commands over an unverified connection", n)
					}
					return
				}
				if diff := cmp.Diff(map[string]string{"t.bin": digest(p.Data)}, r.outputs(t)); diff != "" {
					t.Errorf("files (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestModeReaderAndJoinGroup: a transit server (innd's "401 MODE-READER")
// gets MODE READER before anything else; join_group sends GROUP once per
// connection for the file's group.
func TestModeReaderAndJoinGroup(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Transit: true})
	p := newPosting("m.bin", 12, 9000, 3000)
	serve(t, s, nil, p)
	c := server(s, "innd")
	c.JoinGroup = true
	c.Connections = 1
	r := newRun(t, c)
	sum := r.run(t, poster.NZB(p))
	if !sum.Complete() {
		t.Fatalf("not complete: %v %s", results(sum), r.log.String())
	}
	lines := s.CommandLines(1)
	var got []string
	for _, l := range lines {
		if strings.HasPrefix(l, "BODY") {
			l = "BODY"
		}
		got = append(got, l)
	}
	want := []string{"CAPABILITIES", "MODE READER", "CAPABILITIES", "GROUP " + testGroup, "BODY", "BODY", "BODY", "QUIT"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
}

// TestIdleClose: a connection with nothing to do for idle_timeout says
// QUIT and leaves the pool while another is still busy.
func TestIdleClose(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	a := newPosting("i1.bin", 13, 3000, 3000)
	b := newPosting("i2.bin", 14, 3000, 3000)
	serve(t, s, nil, a, b)
	// The second BODY is answered only once a connection has said QUIT:
	// the other connection runs out of work meanwhile and has to leave on
	// its own. The wait is bounded so that a connection that never leaves
	// fails the check below instead of hanging the test.
	wire := map[string][]byte{a.MessageID(1): a.WireBody(1), b.MessageID(1): b.WireBody(1)}
	var bodies, held atomic.Int32
	var quitFirst atomic.Bool
	s.SetHandler("BODY", func(conn int, cmd proto.Command) []byte {
		id := ""
		if len(cmd.Args) > 0 {
			id = cmd.Args[0]
		}
		if bodies.Add(1) == 2 {
			held.Store(int32(conn))
			for deadline := time.Now().Add(30 * time.Second); s.Count("QUIT") == 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			quitFirst.Store(s.Count("QUIT") > 0)
		}
		w, ok := wire[id]
		if !ok {
			return proto.AppendResponse(nil, proto.CodeNoSuchID, "No such article")
		}
		return append(proto.AppendResponse(nil, proto.CodeBodyFollows, "0 "+id), w...)
	})
	c := server(s, "s1")
	c.Connections, c.Pipeline = 2, 1
	r := newRun(t, c)
	r.cfg.IdleTimeout = tomlconf.Duration(50 * time.Millisecond)
	// The held BODY outlasts no article timeout: a connection closed for
	// one would pass for the idle one.
	r.cfg.ArticleTimeout = tomlconf.Duration(time.Minute)
	sum := r.run(t, poster.NZB(a, b))
	if !sum.Complete() {
		t.Fatalf("not complete: %v", results(sum))
	}
	firstQuit := 0
	for _, c := range s.Commands() {
		if c.Cmd.Verb == "QUIT" {
			firstQuit = c.Conn
			break
		}
	}
	if slowBody := int(held.Load()); s.Conns() != 2 || !quitFirst.Load() || firstQuit == 0 || firstQuit == slowBody {
		t.Errorf("connections %d; a QUIT before the held BODY's answer %v, the first on conn %d, the held BODY on conn %d: want the idle one to quit first",
			s.Conns(), quitFirst.Load(), firstQuit, slowBody)
	}
}

// TestRateLimit: with a rate, the token bucket holds reads back (the time
// it did so is counted); without, it never does.
func TestRateLimit(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("rate.bin", 60, 60000, 6000)
	serve(t, s, nil, p)
	for _, rate := range []tomlconf.Size{0, 40000} {
		r := newRun(t, server(s, "s1"))
		r.cfg.Rate = rate
		sum := r.run(t, poster.NZB(p))
		if !sum.Complete() {
			t.Fatalf("rate %d: %v", rate, results(sum))
		}
		if (sum.Throttled > 0) != (rate > 0) {
			t.Errorf("rate %d: reads held back for %v", rate, sum.Throttled)
		}
	}
}

// TestIPVersion: ip_version = ipv6 cannot reach 127.0.0.1; the server is
// given up with the connect error, and the run says so.
func TestIPVersion(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("ip.bin", 61, 3000, 3000)
	serve(t, s, nil, p)
	c := server(s, "s1")
	c.IPVersion = "ipv4"
	if sum := newRun(t, c).run(t, poster.NZB(p)); !sum.Complete() {
		t.Fatalf("ipv4: %v %s", results(sum), sum.Fatal)
	}
	c.IPVersion = "ipv6"
	sum := newRun(t, c).run(t, poster.NZB(p))
	if sum.Complete() || !strings.Contains(sum.Fatal, "no usable server left; s1:") || !strings.Contains(sum.Fatal, "connect") {
		t.Errorf("ipv6 to 127.0.0.1: fatal %q", sum.Fatal)
	}
}
