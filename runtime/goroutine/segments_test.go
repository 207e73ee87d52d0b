package goroutine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine"
)

// segMachine is a SegmentSender that writes its script of segments at
// the start and closes; it counts how its output was taken.
type segMachine struct {
	segs      []machine.Segment
	bodies    machine.BodySource // for AppendOutgoing
	byteCalls int                // AppendOutgoing calls that found output
}

func (m *segMachine) Receive(time.Time, []byte) error { return nil }
func (m *segMachine) Timeout(time.Time)               {}
func (m *segMachine) Deadline() (time.Time, bool)     { return time.Time{}, false }
func (m *segMachine) Closed() bool                    { return len(m.segs) == 0 }

func (m *segMachine) AppendSegments(dst []machine.Segment) []machine.Segment {
	dst = append(dst, m.segs...)
	m.segs = nil
	return dst
}

func (m *segMachine) AppendOutgoing(dst []byte) []byte {
	if len(m.segs) == 0 {
		return dst
	}
	m.byteCalls++
	dst, _ = machine.AppendSegmentBytes(dst, m.segs, m.bodies)
	m.segs = nil
	return dst
}

// bodyMap is a BodySource over a map.
type bodyMap map[string][]byte

func (b bodyMap) Body(token string) ([]byte, error) {
	body, ok := b[token]
	if !ok {
		return nil, fmt.Errorf("no article %s", token)
	}
	return body, nil
}

// writerSource is a BodySource that also writes bodies itself.
type writerSource struct {
	bodyMap
	writes []string
}

func (w *writerSource) WriteBody(dst io.Writer, token string, size int64) (int64, error) {
	w.writes = append(w.writes, token)
	body, err := w.Body(token)
	if err != nil {
		return 0, err
	}
	n, err := dst.Write(body)
	return int64(n), err
}

// appenderSource appends small bodies and writes large ones itself, as
// the relay's spool source does (pread for small, sendfile for large).
type appenderSource struct {
	writerSource
	appends []string
}

func (a *appenderSource) AppendBody(dst []byte, token string, size int64) ([]byte, error) {
	a.appends = append(a.appends, token)
	body, err := a.Body(token)
	if err != nil {
		return dst, err
	}
	return append(dst, body...), nil
}

// plannerSource is an appenderSource that is told the small articles of
// each write first (drive.BodyPlanner).
type plannerSource struct {
	appenderSource
	plans [][]string
}

func (p *plannerSource) PlanBodies(tokens []string) {
	p.plans = append(p.plans, append([]string(nil), tokens...))
}

func TestRunSegments(t *testing.T) {
	big := strings.Repeat("x", 5<<20) // more than one gather batch
	bodies := bodyMap{
		"@a@":   []byte("Subject: a\r\n\r\n..dot\r\n.\r\n"),
		"@b@":   []byte("Subject: b\r\n\r\nb\r\n.\r\n"),
		"@big@": []byte(big + "\r\n.\r\n"),
	}
	script := []machine.Segment{
		{Bytes: []byte("TAKETHIS <a@x>\r\n")},
		{Token: "@a@", Size: int64(len(bodies["@a@"]))},
		{Bytes: []byte("CHECK <c@x>\r\nTAKETHIS <big@x>\r\n")},
		{Token: "@big@", Size: int64(len(bodies["@big@"]))},
		{Bytes: []byte("TAKETHIS <b@x>\r\n")},
		{Token: "@b@", Size: int64(len(bodies["@b@"]))},
	}
	want := "TAKETHIS <a@x>\r\n" + string(bodies["@a@"]) + "CHECK <c@x>\r\nTAKETHIS <big@x>\r\n" +
		string(bodies["@big@"]) + "TAKETHIS <b@x>\r\n" + string(bodies["@b@"])

	tests := []struct {
		name        string
		source      func() machine.BodySource
		wantErr     string // part of Run's error; "" for success
		wantWrites  []string
		wantAppends []string
		wantPlans   [][]string // PlanBodies calls, each with its tokens
		byteOutput  bool       // the runtime should have used AppendOutgoing
		wantWritten string
	}{
		{name: "gathered bodies", source: func() machine.BodySource { return bodies }, wantWritten: want},
		{name: "body writer", source: func() machine.BodySource { return &writerSource{bodyMap: bodies} },
			wantWrites: []string{"@a@", "@big@", "@b@"}, wantWritten: want},
		{name: "small bodies appended, large written", source: func() machine.BodySource {
			return &appenderSource{writerSource: writerSource{bodyMap: bodies}}
		}, wantAppends: []string{"@a@", "@b@"}, wantWrites: []string{"@big@"}, wantWritten: want},
		{name: "small bodies planned, then appended", source: func() machine.BodySource {
			return &plannerSource{appenderSource: appenderSource{writerSource: writerSource{bodyMap: bodies}}}
		}, wantPlans: [][]string{{"@a@", "@b@"}}, wantAppends: []string{"@a@", "@b@"}, wantWrites: []string{"@big@"}, wantWritten: want},
		{name: "appender fails", source: func() machine.BodySource {
			return &appenderSource{writerSource: writerSource{bodyMap: bodyMap{"@big@": bodies["@big@"]}}}
		}, wantErr: "read article @a@: no article @a@"},
		{name: "appender size differs", source: func() machine.BodySource {
			return &appenderSource{writerSource: writerSource{bodyMap: bodyMap{"@a@": []byte("x\r\n.\r\n")}}}
		}, wantErr: "read article @a@: 6 bytes, want"},
		{name: "no body source: AppendOutgoing", source: func() machine.BodySource { return nil },
			byteOutput: true, wantWritten: want},
		{name: "missing article", source: func() machine.BodySource { return bodyMap{"@a@": bodies["@a@"]} },
			wantErr: "read article @big@: no article @big@"},
		{name: "size differs", source: func() machine.BodySource {
			return bodyMap{"@a@": bodies["@a@"], "@big@": []byte("short\r\n.\r\n")}
		}, wantErr: "read article @big@: 10 bytes, want"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan string, 1)
			addr := serve(t, func(c net.Conn, r *bufio.Reader) {
				b, _ := io.ReadAll(r)
				got <- string(b)
			})
			src := tc.source()
			conn := New(dial(t, addr), Options{Bodies: src})
			m := &segMachine{segs: append([]machine.Segment(nil), script...), bodies: bodies}
			err := conn.Run(context.Background(), m, nil)
			conn.Close()
			written := <-got
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Run = %v, want an error with %q", err, tc.wantErr)
				}
				// Nothing after the unreadable article went out.
				if strings.Contains(written, "TAKETHIS <b@x>") {
					t.Errorf("written after the failure: %q", clipString(written))
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if written != tc.wantWritten {
				t.Errorf("written %d bytes %q, want %d bytes %q", len(written), clipString(written), len(tc.wantWritten), clipString(tc.wantWritten))
			}
			if (m.byteCalls > 0) != tc.byteOutput {
				t.Errorf("AppendOutgoing used %d times, want used=%v", m.byteCalls, tc.byteOutput)
			}
			if ws, ok := src.(*writerSource); ok {
				if d := cmp.Diff(tc.wantWrites, ws.writes); d != "" {
					t.Errorf("WriteBody calls (-want +got):\n%s", d)
				}
			}
			if ps, ok := src.(*plannerSource); ok {
				if d := cmp.Diff(tc.wantPlans, ps.plans); d != "" {
					t.Errorf("PlanBodies calls (-want +got):\n%s", d)
				}
				src = &ps.appenderSource
			}
			if as, ok := src.(*appenderSource); ok {
				if d := cmp.Diff(tc.wantWrites, as.writes); d != "" {
					t.Errorf("WriteBody calls (-want +got):\n%s", d)
				}
				if d := cmp.Diff(tc.wantAppends, as.appends); d != "" {
					t.Errorf("AppendBody calls (-want +got):\n%s", d)
				}
			}
		})
	}
}

// TestRunSegmentsWriteError: a write that fails ends Run with the error.
func TestRunSegmentsWriteError(t *testing.T) {
	client, server := net.Pipe()
	server.Close()
	conn := New(client, Options{Bodies: bodyMap{"@a@": []byte(".\r\n")}})
	m := &segMachine{segs: []machine.Segment{{Bytes: []byte("TAKETHIS <a@x>\r\n")}, {Token: "@a@", Size: 3}}}
	err := conn.Run(context.Background(), m, nil)
	if err == nil || !strings.Contains(err.Error(), "goroutine: write") || !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Run = %v, want a write error", err)
	}
}

func clipString(s string) string {
	if len(s) > 120 {
		return s[:60] + "..." + s[len(s)-60:]
	}
	return s
}

// stepMachine gets its only output from the owner's step callback, as a
// feed gets Offer or Close from its owner.
type stepMachine struct {
	out  []byte
	done bool
}

func (m *stepMachine) Receive(time.Time, []byte) error { return nil }
func (m *stepMachine) Timeout(time.Time)               {}
func (m *stepMachine) Deadline() (time.Time, bool)     { return time.Time{}, false }
func (m *stepMachine) Closed() bool                    { return m.done && len(m.out) == 0 }
func (m *stepMachine) AppendOutgoing(dst []byte) []byte {
	dst = append(dst, m.out...)
	m.out = nil
	return dst
}

// TestRunWritesStepOutput: output a step callback produced goes out before
// Run waits for the peer (which here says nothing until it got it).
func TestRunWritesStepOutput(t *testing.T) {
	got := make(chan string, 1)
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		line, _ := r.ReadString('\n')
		got <- line
	})
	conn := New(dial(t, addr), Options{})
	defer conn.Close()
	m := &stepMachine{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := conn.Run(ctx, m, func(time.Time) error {
		if !m.done {
			m.out, m.done = []byte("QUIT\r\n"), true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if line := <-got; line != "QUIT\r\n" {
		t.Fatalf("server read %q", line)
	}
}
