package handshake

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
)

// fuzzRun feeds server to a machine chosen by bits (a Handshake with a
// configuration from the low bits, or a Session when bit 7 is set), cut
// into pieces of size chunk (0: whole), taking the TLS handshake when asked.
func fuzzRun(bits byte, server []byte, chunk int) hsResult {
	cfg := Config{
		Reader: bits&1 != 0,
		Stream: bits&2 != 0,
		TLS:    TLSMode(bits >> 2 & 3 % 3),
	}
	if bits&16 != 0 {
		cfg.User, cfg.Pass = "alice", "pw"
	}
	var m eventer
	if bits&128 != 0 {
		m = NewSession(t0, cfg, proto.List("ACTIVE", ""))
	} else {
		m = New(t0, cfg)
	}
	var r hsResult
	r.Out = string(m.AppendOutgoing(nil))
	if chunk <= 0 {
		chunk = len(server) + 1
	}
	for p := server; len(p) > 0 && !m.Closed(); {
		n := min(chunk, len(p))
		err := m.Receive(t0, p[:n])
		p = p[n:]
		r.Out += string(m.AppendOutgoing(nil))
		if err != nil {
			r.Err = "error"
			break
		}
		if h, ok := m.(*Handshake); ok && h.WantTLS() && len(p) == 0 {
			h.TLSDone(t0, nil)
			r.Out += string(m.AppendOutgoing(nil))
		}
	}
	if !m.Closed() {
		if d, ok := m.Deadline(); ok {
			m.Timeout(d)
			r.Out += string(m.AppendOutgoing(nil))
		}
	}
	r.Events = drainEvents(m)
	r.Closed = m.Closed()
	return r
}

// FuzzHandshake feeds arbitrary server bytes to the handshake and session
// machines. Properties: no panic; the outcome is the same whether the bytes
// arrive whole or one by one; everything written is well-formed command
// lines; at most one final event, and a Closed machine has emitted Failed.
func FuzzHandshake(f *testing.F) {
	for _, s := range []struct {
		bits   byte
		server string
	}{
		{0, "200 hi\r\n" + transitCaps},
		{1, "200 innd\r\n" + transitCaps + "200 nnrpd\r\n" + readerCaps},
		{2, "200 innd\r\n" + transitCaps + "203 StreamOK.\r\n"},
		{16 | 4, "200 hi\r\n" + tlsCaps + "382 go\r\n"},
		{16, "200 hi\r\n480 auth\r\n381 pw\r\n281 ok\r\n" + plainCaps},
		{3, "201 old\r\n500 what\r\n200 ok\r\n203 ok\r\n"},
		{0, "HTTP/1.0 200 OK\r\n"},
		{128 | 16, "480 auth\r\n281 ok\r\n215 list\r\na 1 1 y\r\n.\r\n"},
		{128, "401 MODE-READER\r\n200 ok\r\n" + plainCaps + "215 x\r\n.\r\n"},
	} {
		f.Add(s.bits, []byte(s.server))
	}
	f.Fuzz(func(t *testing.T, bits byte, server []byte) {
		whole := fuzzRun(bits, server, 0)
		for _, chunk := range []int{1, 7} {
			if d := cmp.Diff(whole, fuzzRun(bits, server, chunk)); d != "" {
				t.Fatalf("fed whole vs in pieces of %d (-whole +pieces):\n%s", chunk, d)
			}
		}
		out := []byte(whole.Out)
		for len(out) > 0 {
			i := bytes.Index(out, []byte("\r\n"))
			if i < 0 {
				t.Fatalf("output ends without CRLF: %q", out)
			}
			if _, err := proto.ParseCommand(out[:i+2]); err != nil {
				t.Fatalf("output line %q: %v", out[:i], err)
			}
			out = out[i+2:]
		}
		if len(whole.Events) > 1 {
			t.Fatalf("%d events, want at most one: %v", len(whole.Events), whole.Events)
		}
		if whole.Closed {
			if len(whole.Events) != 1 {
				t.Fatalf("closed without a Failed event")
			}
			if _, ok := whole.Events[0].(Failed); !ok {
				t.Fatalf("closed after %v", whole.Events[0])
			}
		}
	})
}
