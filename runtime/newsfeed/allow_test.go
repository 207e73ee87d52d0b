package newsfeed

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestIngestAllow feeds the ingest listener from loopback under allow
// lists that exclude and include 127.0.0.1, on both runtimes: an excluded
// client gets the 502 greeting and the connection closes; an included one
// gets 200 and is served.
func TestIngestAllow(t *testing.T) {
	tests := []struct {
		name   string
		allow  string
		greet  string // prefix of the greeting
		denied int64
		conns  int64
	}{
		{"excluded", `allow = ["192.0.2.0/24"]`, "502 Access denied", 1, 0},
		{"included", `allow = ["127.0.0.1"]`, "200 ", 0, 1},
		{"default loopback", ``, "200 ", 0, 1},
	}
	forRuntimes(t, func(t *testing.T, rt string) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				cfg := relayConfigRT(t, rt, t.TempDir(), tc.allow+"\n")
				h := startRelay(t, cfg, nil)
				c, err := net.Dial("tcp", h.r.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				br := bufio.NewReader(c)
				greet, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("greeting: %q, %v", greet, err)
				}
				if !strings.HasPrefix(greet, tc.greet) {
					t.Fatalf("greeting %q, want prefix %q", greet, tc.greet)
				}
				if tc.denied > 0 {
					// The relay closes: the next read ends, with nothing more.
					rest, err := io.ReadAll(br)
					if err != nil || len(rest) != 0 {
						t.Errorf("after 502: read %q, %v; want EOF", rest, err)
					}
				} else {
					io.WriteString(c, "MODE STREAM\r\n")
					if l, _ := br.ReadString('\n'); !strings.HasPrefix(l, "203 ") {
						t.Errorf("MODE STREAM: %q, want 203", l)
					}
				}
				in := h.r.Status().Ingest
				got := []int64{in.Denied, in.Connections}
				if diff := cmp.Diff([]int64{tc.denied, tc.conns}, got); diff != "" {
					t.Errorf("denied, connections (-want +got):\n%s", diff)
				}
			})
		}
	})
}
