package peerconn

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestBackoff: the delays a connection waits through a run of failures:
// doubling to the ceiling, back at the base after a kick, and at the base,
// without growing, while sessions end on unreadable articles.
func TestBackoff(t *testing.T) {
	const base, ceiling = time.Second, 10 * time.Second
	tests := []struct {
		name   string
		events string // per failure: f failed, k failed then kicked, u unreadable article
		want   []time.Duration
	}{
		{"doubles to the ceiling", "fffff", []time.Duration{1, 2, 4, 8, 10}},
		{"kick resets", "ffkf", []time.Duration{1, 2, 4, 1}},
		{"unreadable stays at base", "ffuuf", []time.Duration{1, 2, 1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []time.Duration
			backoff := base
			for _, e := range tc.events {
				// As Run: the wait before the retry, then the next delay.
				if e == 'u' {
					backoff = base
				}
				got = append(got, backoff/time.Second)
				backoff = nextBackoff(backoff, base, ceiling, e == 'k', e == 'u')
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("waits in seconds (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJitter: a wait stays within ±25% of the delay.
func TestJitter(t *testing.T) {
	for range 1000 {
		if d := jitter(time.Second); d < 750*time.Millisecond || d > 1250*time.Millisecond {
			t.Fatalf("jitter(1s) = %v", d)
		}
	}
}

// TestDialBindAddress: a connection from a bind address leaves from it
// (Linux routes all of 127/8 to the loopback interface).
func TestDialBindAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	from := make(chan string, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			from <- err.Error()
			return
		}
		host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
		from <- host
		nc.Close()
	}()
	nc, err := Dial(context.Background(), ln.Addr().String(), "127.0.0.2", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := <-from; got != "127.0.0.2" {
		t.Errorf("the peer saw the connection from %s, want 127.0.0.2", got)
	}
	if _, err := Dial(context.Background(), ln.Addr().String(), "not-an-ip", time.Second, nil); err == nil {
		t.Error("Dial from a bind address that is no IP address succeeded")
	}
}

// TestDynamic: another connection opens only when work waited beyond what
// the open connections hold at two looks an interval apart, one at a
// time, never past the ceiling.
func TestDynamic(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	type look struct {
		after   time.Duration // since t0
		conns   int
		waiting int64
		want    bool
	}
	tests := []struct {
		name  string
		looks []look
	}{
		{"first look only records", []look{{0, 1, 1000, false}}},
		{"work waits two looks", []look{{0, 1, 1000, false}, {time.Second, 1, 1000, true}}},
		{"within the interval nothing", []look{{0, 1, 1000, false}, {500 * time.Millisecond, 1, 1000, false}, {time.Second, 1, 1000, true}}},
		{"the windows hold it", []look{{0, 2, 20, false}, {time.Second, 2, 20, false}, {2 * time.Second, 2, 21, false}, {3 * time.Second, 2, 21, true}}},
		{"one at a time", []look{{0, 1, 1000, false}, {time.Second, 1, 1000, true}, {2 * time.Second, 2, 1000, false}, {3 * time.Second, 2, 1000, true}}},
		{"never past max", []look{{0, 3, 1000, false}, {time.Second, 3, 1000, false}, {2 * time.Second, 3, 1000, false}}},
		{"drained", []look{{0, 1, 1000, false}, {time.Second, 1, 0, false}, {2 * time.Second, 1, 1000, false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Dynamic{Max: 3, Window: 10, Interval: time.Second}
			for i, l := range tc.looks {
				if got := d.Grow(t0.Add(l.after), l.conns, l.waiting); got != l.want {
					t.Errorf("look %d (%v, %d conns, %d waiting): grow %v, want %v", i, l.after, l.conns, l.waiting, got, l.want)
				}
			}
		})
	}
}
