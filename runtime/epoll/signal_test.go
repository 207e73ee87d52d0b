//go:build linux

package epoll

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/newsflow/newsflow/machine"
)

// TestShortSendfileUnderSignals: sendfile(2) comes back short when a
// signal is pending (the Go runtime preempts goroutines with SIGURG),
// although the socket could take more. The kernel signals writability
// (EPOLLOUT) only after a write found the send buffer full, so a loop that
// took the short count for "full" waited for an edge that never came: the
// connection stopped with its output unwritten and an empty send queue
// (newsbench feed -cases large-fanout on the epoll runtime hung so).
//
// The test sends articles by sendfile through a send buffer larger than
// all of them, so the socket never fills and every short count is one the
// socket did not cause, while SIGURG hits every thread of the process. A
// watcher asks the loop, between its rounds, whether the connection waits
// for EPOLLOUT with nothing left in its send queue after the loop took
// every event epoll held: such a connection is stuck for good, and the
// test fails at once instead of hanging. It repeats the transfer until a
// sendfile came back short, so the path is exercised.
func TestShortSendfileUnderSignals(t *testing.T) {
	arts, script, want := signalScript()
	src := fileOnly{newFileStore(t, arts)}

	stopStorm := signalStorm(t)
	defer stopStorm()

	const maxRounds = 50
	for round := 1; ; round++ {
		st := feedUnderSignals(t, src, script, want)
		if t.Failed() {
			return
		}
		// Every article takes one sendfile call; the others came
		// back short (and were retried) or met EAGAIN.
		if short := st.Sendfiles - int64(len(arts)) - st.WouldBlock; short > 0 {
			t.Logf("round %d: %d sendfile calls came back short and were retried", round, short)
			return
		}
		if round == maxRounds {
			t.Fatalf("no sendfile came back short in %d rounds under SIGURG: the test did not exercise the path", maxRounds)
		}
	}
}

// TestWritevUnderSignals: the loop keeps epoll(7)'s rule for writev, a
// short count means a full socket, because TCP's sendmsg stops short only
// when it ran out of room (and then arms EPOLLOUT), not for a signal. The
// same articles as TestShortSendfileUnderSignals, from memory, so that
// they go out in writevs of up to maxGather bytes through a socket that
// never fills, under the same storm: a writev that came back short for
// the signal would leave the connection stuck, and the watcher says so.
func TestWritevUnderSignals(t *testing.T) {
	arts, script, want := signalScript()
	src := bodiesOf(arts)

	stopStorm := signalStorm(t)
	defer stopStorm()

	for range 10 {
		st := feedUnderSignals(t, src, script, want)
		if t.Failed() {
			return
		}
		if st.Sendfiles != 0 || st.Writes == 0 {
			t.Fatalf("stats %+v: want writevs only", st)
		}
	}
}

// signalScript is 24 articles of 256 KB with their TAKETHIS commands, and
// the bytes a peer should get for them.
func signalScript() ([]stored, []machine.Segment, []byte) {
	arts := makeArticles("sig", 24, 256<<10)
	var script []machine.Segment
	var want bytes.Buffer
	for _, a := range arts {
		cmd := fmt.Sprintf("TAKETHIS %s\r\n", a.MessageID)
		script = append(script, machine.Segment{Bytes: []byte(cmd)}, machine.Segment{Token: a.Token, Size: a.Size})
		want.WriteString(cmd)
		want.Write(a.wire)
	}
	script = append(script, machine.Segment{Bytes: []byte("QUIT\r\n")})
	want.WriteString("QUIT\r\n")
	return arts, script, want.Bytes()
}

// feedUnderSignals writes script on a fresh connection to a peer that
// reads everything, failing t if the connection gets stuck or the peer
// gets other bytes than want. It returns the loop's Stats.
func feedUnderSignals(t *testing.T, src machine.BodySource, script []machine.Segment, want []byte) Stats {
	got := make(chan []byte, 1)
	addr := peer(t, func(c net.Conn, r *bufio.Reader) {
		var b bytes.Buffer
		io.Copy(&b, r)
		got <- b.Bytes()
	})
	l := newLoop(t, Options{Bodies: src})
	c := dialLoop(t, l, addr)
	// Room for everything: the socket never fills.
	onLoop(t, l, func() {
		unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 2*len(want))
	})

	done := make(chan struct{})
	var stuck string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		seen := 0
		for {
			select {
			case <-done:
				return
			default:
			}
			res := make(chan string, 1)
			if err := l.post(func() { res <- l.stuckWriting(c) }); err != nil {
				return
			}
			if s := <-res; s != "" {
				// Twice in a row, with the loop's epoll taken in
				// between: not an edge on its way.
				if seen++; seen == 2 {
					stuck = s
					c.Close()
					return
				}
			} else {
				seen = 0
			}
			time.Sleep(time.Millisecond)
		}
	}()
	err := c.Run(context.Background(), &segMachine{segs: append([]machine.Segment(nil), script...)}, nil)
	close(done)
	wg.Wait()
	written := <-got
	if stuck != "" {
		t.Fatalf("the connection waits for EPOLLOUT that cannot come: %s", stuck)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(written, want) {
		t.Fatalf("peer got %d bytes, want %d; first difference at %d", len(written), len(want), firstDiff(written, want))
	}
	return l.Stats()
}

// stuckWriting says, on the loop goroutine, why c can never write again,
// or "" when it can: c has output and waits for EPOLLOUT, its socket's
// send queue is empty, and no event for it is pending in epoll. The send
// queue is read first: whatever emptied it raised its events before.
func (l *Loop) stuckWriting(c *Conn) string {
	if c.fd < 0 {
		return ""
	}
	outq, err := unix.IoctlGetInt(c.fd, unix.SIOCOUTQ)
	if err != nil || outq != 0 {
		return ""
	}
	// Take what epoll holds, as the loop would after this function.
	n, err := l.wait(0, false)
	if err != nil {
		return ""
	}
	for i := 0; i < n; i++ {
		ev := l.events[i]
		if h, ok := l.handlers[int(ev.Fd)]; ok {
			h.handle(ev.Events)
		}
	}
	if c.fd < 0 || !c.out.pending() || c.writable {
		return ""
	}
	return fmt.Sprintf("%d output pieces unwritten, send queue empty, writable false (stats %+v)", len(c.out.items), l.stats)
}

// signalStorm sends SIGURG, the Go runtime's preemption signal (harmless
// when the runtime did not ask for it), to every thread of the process
// until the returned function is called.
func signalStorm(t *testing.T) (stop func()) {
	t.Helper()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pid := os.Getpid()
		for {
			select {
			case <-quit:
				return
			default:
			}
			ents, err := os.ReadDir("/proc/self/task")
			if err != nil {
				t.Error(err)
				return
			}
			for _, e := range ents {
				if tid, err := strconv.Atoi(e.Name()); err == nil {
					unix.Tgkill(pid, tid, syscall.SIGURG)
				}
			}
			time.Sleep(20 * time.Microsecond)
		}
	}()
	return func() { close(quit); wg.Wait() }
}
