//go:build linux

package driver_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/epoll"
	"github.com/newsflow/newsflow/runtime/goroutine"
	"github.com/newsflow/newsflow/runtime/testpeer/loopback"
)

// The seam's helpers run on both drivers over loopback TCP, against a
// scripted peer.

// drivers dial addr with each driver.
var drivers = []struct {
	name string
	dial func(t *testing.T, addr string) driver.Driver
}{
	{"goroutine", func(t *testing.T, addr string) driver.Driver {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c := goroutine.New(nc, goroutine.Options{})
		t.Cleanup(func() { c.Close() })
		return c
	}},
	{"epoll", func(t *testing.T, addr string) driver.Driver {
		l, err := epoll.New(epoll.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		c, err := l.Dial(context.Background(), addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}},
}

// peer serves one connection with a script and returns the address.
var peer = loopback.ServeOne

func TestHandshake(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Run("ready, with bytes beyond the last response", func(t *testing.T) {
				addr := peer(t, func(c net.Conn, r *bufio.Reader) {
					c.Write([]byte("200 hello\r\n"))
					r.ReadString('\n') // CAPABILITIES
					c.Write([]byte("101 Capability list:\r\nVERSION 2\r\nIHAVE\r\n.\r\n238 <early@x>\r\n"))
					r.ReadString('\n') // wait for the close
				})
				dr := d.dial(t, addr)
				ready, left, err := driver.Handshake(context.Background(), dr, time.Now(), handshake.Config{})
				if err != nil {
					t.Fatalf("Handshake: %v", err)
				}
				if ready.Streaming || ready.TLS {
					t.Errorf("ready = %+v, want neither streaming nor TLS", ready)
				}
				if got := string(left); got != "238 <early@x>\r\n" {
					t.Errorf("leftover = %q, want the bytes after the capability list", got)
				}
			})
			t.Run("refused: the machine's Failed", func(t *testing.T) {
				addr := peer(t, func(c net.Conn, r *bufio.Reader) {
					c.Write([]byte("502 go away\r\n"))
					r.ReadString('\n')
				})
				_, _, err := driver.Handshake(context.Background(), d.dial(t, addr), time.Now(), handshake.Config{})
				var f handshake.Failed
				if !errors.As(err, &f) || f.Reason != handshake.ReasonUnavailable {
					t.Errorf("Handshake = %v, want a handshake.Failed with reason %v", err, handshake.ReasonUnavailable)
				}
			})
			t.Run("context ended: the run's error", func(t *testing.T) {
				addr := peer(t, func(c net.Conn, r *bufio.Reader) { r.ReadString('\n') })
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_, _, err := driver.Handshake(ctx, d.dial(t, addr), time.Now(), handshake.Config{})
				if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "handshake: ") {
					t.Errorf("Handshake = %v, want \"handshake: ...\" wrapping context.Canceled", err)
				}
			})
		})
	}
}

// liner is a machine that writes the lines its owner gives it (Say) and
// never closes on its own.
type liner struct {
	out    []byte
	closed bool
}

func (m *liner) Say(s string) func(time.Time) {
	return func(time.Time) { m.out = append(m.out, s+"\r\n"...) }
}
func (m *liner) Receive(time.Time, []byte) error { return nil }
func (m *liner) Timeout(time.Time)               {}
func (m *liner) Deadline() (time.Time, bool)     { return time.Time{}, false }
func (m *liner) Closed() bool                    { return m.closed && len(m.out) == 0 }
func (m *liner) AppendOutgoing(dst []byte) []byte {
	dst = append(dst, m.out...)
	m.out = m.out[:0]
	return dst
}

// TestMailbox: inputs put before Attach wait for it, every input is
// delivered once and in order, Wake calls step, and a machine closed
// through the mailbox ends the run well.
func TestMailbox(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			got := make(chan []string, 1)
			addr := peer(t, func(c net.Conn, r *bufio.Reader) {
				var lines []string
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						got <- lines
						return
					}
					lines = append(lines, strings.TrimSuffix(l, "\r\n"))
				}
			})
			dr := d.dial(t, addr)
			m := &liner{}
			var mb driver.Mailbox
			mb.Put(m.Say("before attach"))
			mb.Attach(dr)
			woken := make(chan struct{}, 1)
			steps := 0
			done := make(chan error, 1)
			go func() {
				done <- dr.Run(context.Background(), m, func(time.Time) error {
					steps++
					if steps > 1 {
						select {
						case woken <- struct{}{}:
						default:
						}
					}
					return nil
				})
			}()
			var want []string
			want = append(want, "before attach")
			for i := range 50 {
				s := strings.Repeat("x", i%7) + "line"
				want = append(want, s)
				mb.Put(m.Say(s))
			}
			mb.Wake()
			<-woken
			mb.Put(func(time.Time) { m.closed = true })
			if err := <-done; err != nil {
				t.Errorf("Run = %v, want nil (closed through the mailbox)", err)
			}
			mb.Detach()
			if d := cmp.Diff(want, <-got); d != "" {
				t.Errorf("lines the peer read (-want +got):\n%s", d)
			}
		})
	}
}
