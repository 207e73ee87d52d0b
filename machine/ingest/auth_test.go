package ingest

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStartTLSDropsPlaintextPipeline: commands pipelined in the clear
// behind STARTTLS are dropped, not served inside TLS (RFC 4642 §2.2.2; a
// man in the middle could have injected them), and MODE STREAM is forgotten.
func TestStartTLSDropsPlaintextPipeline(t *testing.T) {
	cases := []struct {
		name      string
		tlsErr    error
		wantOut   string
		wantEv    []string
		wantClose bool
	}{
		{"handshake ok", nil, "", []string{"tls started"}, false},
		{"handshake failed", errors.New("bad record"), "", []string{"closed STARTTLS handshake failed: bad record"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := New(t0, Config{PathHost: "relay.example", StartTLS: true})
			g.AppendOutgoing(nil)
			if err := g.Receive(t0, []byte("MODE STREAM\r\nSTARTTLS\r\nCHECK <injected@evil>\r\n")); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff("203 Streaming permitted\r\n382 Begin TLS negotiation now\r\n", string(g.AppendOutgoing(nil))); diff != "" {
				t.Fatalf("before the handshake (-want +got):\n%s", diff)
			}
			if !g.WantTLS() || !g.Paused() {
				t.Fatalf("WantTLS %v Paused %v after 382, want both", g.WantTLS(), g.Paused())
			}
			if err := g.TLSDone(t0, tc.tlsErr); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantOut, string(g.AppendOutgoing(nil))); diff != "" {
				t.Errorf("after the handshake (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEv, events(g)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if g.Closed() != tc.wantClose || !tc.wantClose && g.Streaming() || g.Secure() == tc.wantClose {
				t.Errorf("Closed %v Streaming %v Secure %v", g.Closed(), g.Streaming(), g.Secure())
			}
			if err := g.TLSDone(t0, nil); err == nil && !tc.wantClose {
				t.Error("a second TLSDone was accepted")
			}
		})
	}
}

// TestAuthDoneOutOfPlace: an answer for no pending Auth is an error.
func TestAuthDoneOutOfPlace(t *testing.T) {
	g := New(t0, Config{AuthRequired: true})
	if err := g.AuthDone(t0, 1, AuthAccepted); err == nil {
		t.Error("AuthDone with nothing pending succeeded")
	}
	g.Receive(t0, []byte("AUTHINFO USER a\r\nAUTHINFO PASS b\r\n"))
	var seq uint64
	for _, ev := range drain(g) {
		if a, ok := ev.(Auth); ok {
			seq = a.Seq
			if a.User != "a" || a.Password != "b" {
				t.Errorf("Auth %+v", a)
			}
		}
	}
	if err := g.AuthDone(t0, seq, AuthVerdict(9)); err == nil {
		t.Error("unknown verdict accepted")
	}
	if err := g.AuthDone(t0, seq, AuthAccepted); err != nil || !g.Authenticated() || g.User() != "a" {
		t.Errorf("AuthDone: %v, Authenticated %v User %q", err, g.Authenticated(), g.User())
	}
}

func drain(g *Ingest) []Event {
	var evs []Event
	for {
		ev, ok := g.NextEvent()
		if !ok {
			return evs
		}
		evs = append(evs, ev)
	}
}

// FuzzIngestAuth feeds arbitrary bytes to an Ingest that requires
// AUTHINFO and offers STARTTLS. Properties: no panic; well-formed output;
// nothing is stored unless 281 went out; the outcome does not depend on
// how the bytes are cut.
func FuzzIngestAuth(f *testing.F) {
	f.Add([]byte("CHECK <a@b>\r\nAUTHINFO USER up1\r\nAUTHINFO PASS s3cret\r\nMODE STREAM\r\n" + takethis("<a@b>", article("<a@b>"))))
	f.Add([]byte(takethis("<a@b>", article("<a@b>")) + "AUTHINFO PASS x\r\nAUTHINFO USER up1\r\nAUTHINFO PASS bad\r\n"))
	f.Add([]byte("AUTHINFO USER up1\r\nAUTHINFO PASS a\r\nAUTHINFO USER up1\r\nAUTHINFO PASS b\r\nAUTHINFO USER up1\r\nAUTHINFO PASS c\r\nDATE\r\n"))
	f.Add([]byte("CAPABILITIES\r\nSTARTTLS\r\nCHECK <a@b>\r\n"))
	cfg := Config{PathHost: "relay.example", MaxArticleSize: 300, AuthRequired: true, StartTLS: true}
	const policy = "want all, store ok, user up1 s3cret, block after 3"
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, o := driveOwner(cfg, policy, [][]byte{in})
		if _, err := statusLines(whole.Out); err != nil {
			t.Fatalf("malformed output: %v\n%q", err, whole.Out)
		}
		if len(o.stored) > 0 && !strings.Contains(whole.Out, "\r\n281 ") {
			t.Fatalf("%d articles stored without a 281:\n%q", len(o.stored), whole.Out)
		}
		if len(in) <= 4096 {
			if got := drive(cfg, policy, bytewise(in)); !cmp.Equal(whole, got) {
				t.Fatalf("byte by byte differs (-whole +bytewise):\n%s", cmp.Diff(whole, got))
			}
		}
		if len(in) > 1 {
			k := int(in[0]) % len(in)
			if got := drive(cfg, policy, split(in, k)); !cmp.Equal(whole, got) {
				t.Fatalf("cut at %d differs (-whole +cut):\n%s", k, cmp.Diff(whole, got))
			}
		}
	})
}
