package nntptest

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
)

func TestCapabilities(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		pre  []string // commands sent before CAPABILITIES, responses unchecked
		want []string
	}{
		{
			name: "default",
			want: []string{"101 Capability list:", "VERSION 2", "IMPLEMENTATION nntptest", "READER", "HDR",
				"LIST ACTIVE NEWSGROUPS OVERVIEW.FMT HEADERS", "NEWNEWS", "OVER MSGID", "POST", "IHAVE", "STREAMING", "."},
		},
		{
			name: "no posting, no streaming, auth and STARTTLS offered",
			opts: Options{NoPosting: true, NoStreaming: true, Auth: &Auth{User: "u", Pass: "p"}, TLS: StartTLS},
			want: []string{"101 Capability list:", "VERSION 2", "IMPLEMENTATION nntptest", "AUTHINFO USER", "STARTTLS",
				"READER", "HDR", "LIST ACTIVE NEWSGROUPS OVERVIEW.FMT HEADERS", "NEWNEWS", "OVER MSGID", "IHAVE", "."},
		},
		{
			name: "authenticated: AUTHINFO and STARTTLS no longer listed",
			opts: Options{Auth: &Auth{User: "u", Pass: "p"}, TLS: StartTLS},
			pre:  []string{"AUTHINFO USER u", "AUTHINFO PASS p"},
			want: []string{"101 Capability list:", "VERSION 2", "IMPLEMENTATION nntptest", "READER", "HDR",
				"LIST ACTIVE NEWSGROUPS OVERVIEW.FMT HEADERS", "NEWNEWS", "OVER MSGID", "POST", "IHAVE", "STREAMING", "."},
		},
		{
			name: "transit before MODE READER",
			opts: Options{Transit: true},
			want: []string{"101 Capability list:", "VERSION 2", "IMPLEMENTATION nntptest", "IHAVE", "MODE-READER", "STREAMING", "."},
		},
		{
			name: "transit after MODE READER",
			opts: Options{Transit: true},
			pre:  []string{"MODE READER"},
			want: []string{"101 Capability list:", "VERSION 2", "IMPLEMENTATION nntptest", "READER", "HDR",
				"LIST ACTIVE NEWSGROUPS OVERVIEW.FMT HEADERS", "NEWNEWS", "OVER MSGID", "POST", "IHAVE", "."},
		},
		{
			name: "configured list",
			opts: Options{Capabilities: []string{"VERSION 2", "READER", "XFEATURE-COMPRESS GZIP"}},
			want: []string{"101 Capability list:", "VERSION 2", "READER", "XFEATURE-COMPRESS GZIP", "."},
		},
		{
			name: "old server",
			opts: Options{NoCapabilities: true},
			want: []string{"500 What?"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, tt.opts)
			c := dialGreeted(t, s)
			for _, p := range tt.pre {
				c.do(p)
			}
			if diff := cmp.Diff(tt.want, c.do("CAPABILITIES")); diff != "" {
				t.Errorf("CAPABILITIES (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTransitMode(t *testing.T) {
	s := readerFixture(t, Options{Transit: true})
	c := dial(t, s)
	if g := c.line(); !strings.HasSuffix(g, "(transit mode)") {
		t.Errorf("greeting %q does not say transit mode", g)
	}
	runSteps(t, c, []step{
		{"GROUP misc.test", []string{"401 MODE-READER"}},
		{"ARTICLE <1@example>", []string{"401 MODE-READER"}},
		{"LIST", []string{"401 MODE-READER"}},
		{"FROBNICATE", []string{"500 What?"}},
		{"MODE STREAM", []string{"203 Streaming permitted"}},
		{"CHECK <new@example>", []string{"238 <new@example>"}},
		{"MODE READER", []string{"200 Posting allowed"}},
		{"GROUP misc.test", []string{"211 3 1 3 misc.test"}},
		// Now talking to "nnrpd": no streaming.
		{"CHECK <new@example>", []string{"500 What?"}},
		{"MODE STREAM", []string{"500 What?"}},
	})
}

func TestAuth(t *testing.T) {
	s := readerFixture(t, Options{Auth: &Auth{User: "joe", Pass: "secret", Required: true}})
	c := dialGreeted(t, s)
	runSteps(t, c, []step{
		{"GROUP misc.test", []string{"480 Authentication required"}},
		{"CHECK <x@y>", []string{"480 Authentication required"}},
		{"AUTHINFO PASS secret", []string{"482 Authentication commands issued out of sequence"}},
		{"AUTHINFO USER joe", []string{"381 Password required"}},
		{"AUTHINFO PASS wrong", []string{"481 Authentication failed"}},
		{"GROUP misc.test", []string{"480 Authentication required"}},
		{"AUTHINFO USER other", []string{"381 Password required"}},
		{"AUTHINFO PASS secret", []string{"481 Authentication failed"}},
		{"AUTHINFO USER joe", []string{"381 Password required"}},
		{"AUTHINFO PASS secret", []string{"281 Authentication accepted"}},
		{"GROUP misc.test", []string{"211 3 1 3 misc.test"}},
		{"AUTHINFO USER joe", []string{"502 Already authenticated"}},
	})
	// The password is recorded as sent but masked in CommandLines.
	if got := s.CommandLines(1)[2]; got != "AUTHINFO PASS ********" {
		t.Errorf("CommandLines masks PASS as %q", got)
	}

	opt := readerFixture(t, Options{Auth: &Auth{User: "joe", Pass: "secret"}})
	c = dialGreeted(t, opt)
	runSteps(t, c, []step{
		{"GROUP misc.test", []string{"211 3 1 3 misc.test"}},
		{"AUTHINFO USER joe", []string{"381 Password required"}},
		{"AUTHINFO PASS nope", []string{"481 Authentication failed"}},
	})

	none := readerFixture(t, Options{})
	c = dialGreeted(t, none)
	runSteps(t, c, []step{{"AUTHINFO USER joe", []string{"502 Authentication not available"}}})
}

func TestTLS(t *testing.T) {
	t.Run("implicit", func(t *testing.T) {
		s := readerFixture(t, Options{TLS: ImplicitTLS})
		c := dial(t, s)
		c.startTLS(s.ClientTLSConfig())
		if g := c.line(); !strings.HasPrefix(g, "200 ") {
			t.Fatalf("greeting over TLS: %q", g)
		}
		runSteps(t, c, []step{{"GROUP misc.test", []string{"211 3 1 3 misc.test"}}})
		// A client that does not trust the certificate fails the handshake.
		if _, err := tls.Dial("tcp", s.HostPort(), &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1"}); err == nil {
			t.Errorf("handshake succeeded without trusting the server's certificate")
		}
	})
	t.Run("STARTTLS", func(t *testing.T) {
		s := readerFixture(t, Options{TLS: StartTLS, Auth: &Auth{User: "u", Pass: "p"}})
		c := dialGreeted(t, s)
		runSteps(t, c, []step{{"STARTTLS", []string{"382 Begin TLS negotiation now"}}})
		c.startTLS(s.ClientTLSConfig())
		runSteps(t, c, []step{
			{"CAPABILITIES", []string{"101 Capability list:", "VERSION 2", "IMPLEMENTATION nntptest", "AUTHINFO USER",
				"READER", "HDR", "LIST ACTIVE NEWSGROUPS OVERVIEW.FMT HEADERS", "NEWNEWS", "OVER MSGID", "POST", "IHAVE", "STREAMING", "."}},
			{"STARTTLS", []string{"502 Already using TLS or authenticated"}},
			{"AUTHINFO USER u", []string{"381 Password required"}},
			{"AUTHINFO PASS p", []string{"281 Authentication accepted"}},
			{"STAT <1@example>", []string{"223 0 <1@example>"}},
		})
		if !strings.Contains(string(s.CertPEM()), "BEGIN CERTIFICATE") || s.CertPool() == nil {
			t.Errorf("no certificate exposed")
		}
	})
	t.Run("none", func(t *testing.T) {
		s := Start(t, Options{})
		if s.ClientTLSConfig() != nil || s.CertPEM() != nil {
			t.Errorf("a plain server exposes TLS material")
		}
		c := dialGreeted(t, s)
		runSteps(t, c, []step{{"STARTTLS", []string{"500 What?"}}})
	})
}

func TestCounting(t *testing.T) {
	s := readerFixture(t, Options{})
	c1 := dialGreeted(t, s)
	c2 := dialGreeted(t, s)
	c1.do("GROUP misc.test")
	c1.do("BODY 1")
	c2.do("BODY <2@example>")
	c2.do("LIST ACTIVE")
	c2.do("LIST NEWSGROUPS")
	c1.do("mode stream")
	for _, tt := range []struct {
		conn int
		name string
		want int
	}{
		{0, "BODY", 2}, {1, "BODY", 1}, {2, "BODY", 1}, {0, "LIST", 2}, {0, "LIST ACTIVE", 1},
		{0, "MODE STREAM", 1}, {0, "MODE", 1}, {0, "ARTICLE", 0}, {3, "BODY", 0}, {0, "list active", 1},
	} {
		if got := s.CountConn(tt.conn, tt.name); got != tt.want {
			t.Errorf("CountConn(%d, %q) = %d, want %d", tt.conn, tt.name, got, tt.want)
		}
	}
	if got := s.Count("BODY"); got != 2 {
		t.Errorf("Count(BODY) = %d", got)
	}
	var got []string
	for _, r := range s.Commands() {
		got = append(got, r.Cmd.String()+"@"+string(rune('0'+r.Conn)))
		if r.At.IsZero() {
			t.Errorf("%v has no time", r)
		}
	}
	want := []string{"GROUP misc.test@1", "BODY 1@1", "BODY <2@example>@2", "LIST ACTIVE@2", "LIST NEWSGROUPS@2", "MODE STREAM@1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Commands (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"BODY <2@example>", "LIST ACTIVE", "LIST NEWSGROUPS"}, s.CommandLines(2)); diff != "" {
		t.Errorf("CommandLines(2) (-want +got):\n%s", diff)
	}
	if s.Conns() != 2 || s.OpenConns() != 2 {
		t.Errorf("Conns %d OpenConns %d, want 2 and 2", s.Conns(), s.OpenConns())
	}
	s.Reset()
	if len(s.Commands()) != 0 || s.Conns() != 2 {
		t.Errorf("Reset kept commands or lost the connection count")
	}
	if n := s.DropConns(); n != 2 {
		t.Errorf("DropConns closed %d", n)
	}
	if c1.rest() != "" {
		t.Errorf("dropped connection still sends")
	}
}

func TestHandler(t *testing.T) {
	s := Start(t, Options{})
	s.SetHandler("XFEATURE", func(conn int, cmd proto.Command) []byte {
		return []byte("290 feature enabled on " + string(rune('0'+conn)) + "\r\n")
	})
	s.SetHandler("LIST ACTIVE.TIMES", func(int, proto.Command) []byte {
		return []byte("215 times\r\ng 1 me\r\n.\r\n")
	})
	s.AddFault(Fault{Cmd: "XFEATURE", Nth: 2, Code: 503})
	c := dialGreeted(t, s)
	runSteps(t, c, []step{
		{"XFEATURE COMPRESS GZIP", []string{"290 feature enabled on 1"}},
		{"XFEATURE COMPRESS GZIP", []string{"503"}},
		{"LIST ACTIVE.TIMES", []string{"215 times", "g 1 me", "."}},
	})
	s.SetHandler("XFEATURE", nil)
	runSteps(t, c, []step{{"XFEATURE COMPRESS GZIP", []string{"500 What?"}}})
}

// TestLongLine shows an over-long command line is refused and the session
// goes on.
func TestLongLine(t *testing.T) {
	s := Start(t, Options{})
	c := dialGreeted(t, s)
	c.send("GROUP " + strings.Repeat("x", 100<<10) + "\r\n")
	if got := c.line(); got != "501 Line too long" {
		t.Errorf("long line: %q", got)
	}
	runSteps(t, c, []step{{"GROUP x", []string{"411 No such group"}}})
}
