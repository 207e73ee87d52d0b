package spoolfs

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
)

// The peer-queue kill -9 test re-executes the test binary as a child that
// plays newsfeed for one peer: it offers batches of articles, Syncs, and
// prints "ACK <id>" for each only after the Sync returned (exactly when
// newsfeed would answer 239 upstream); it takes articles for its one
// connection and prints "ANSWER <id>" when the peer accepts one, before it
// tells the queue (the peer has it from then on); now and then its
// connection drops, the peer defers, and time passes (journal rotations,
// down-spills, replays). The parent SIGKILLs it at a random moment, starts
// the next child on the same directory, and at the end drains what is left
// in-process. Every acknowledged article must have been answered; the
// duplicates must stay within what each restart resent.

const (
	pqKillChildEnv = "NEWSFLOW_PEERQUEUE_KILL_CHILD" // directory, set in the child
	pqKillRoundEnv = "NEWSFLOW_PEERQUEUE_KILL_ROUND"
)

func pqKillConfig() queue.Config {
	cfg := queue.DefaultConfig("peer")
	cfg.QueueSize = 64
	cfg.DeferDelay = 5 * time.Second
	cfg.JournalRotateBytes = 4 << 10
	cfg.JournalRotateInterval = 10 * time.Second
	cfg.DownSpillDelay = 2 * time.Second
	cfg.RotateBytes = 8 << 10
	cfg.RotateInterval = 20 * time.Second
	return cfg
}

// pqKillChild is the child's loop; it only ends by being killed.
func pqKillChild(dir, round string) {
	fail := func(what string, err error) {
		fmt.Println(what, "FAILED", err)
		os.Exit(2)
	}
	now := time.Now()
	p, err := OpenPeerQueue(dir, pqKillConfig(), now, nil)
	if err != nil {
		fail("OPEN", err)
	}
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	up := false
	for i := 0; ; {
		now = now.Add(200 * time.Millisecond)
		if err := p.Tick(now); err != nil {
			fail("TICK", err)
		}
		switch {
		case !up && r.IntN(4) > 0:
			up = true
			err = p.ConnUp(now, 1)
		case up && r.IntN(30) == 0:
			up = false
			err = p.ConnDown(now, 1)
		}
		if err != nil {
			fail("CONN", err)
		}
		var ids []string
		for range 1 + r.IntN(20) {
			id := fmt.Sprintf("<k%s.%d@test>", round, i)
			i++
			if err := p.Offer(now, queue.Entry{Token: "@" + strconv.Itoa(i) + "@", MessageID: id, Offered: now}); err != nil {
				fail("OFFER", err)
			}
			ids = append(ids, id)
		}
		if err := p.Sync(); err != nil {
			fail("SYNC", err)
		}
		for _, id := range ids {
			say("ACK %s", id) // the 239 upstream: only after Sync returned
		}
		if !up {
			continue
		}
		for range r.IntN(30) {
			e, ok, err := p.Next(now, 1)
			if err != nil {
				fail("NEXT", err)
			}
			if !ok {
				break
			}
			o := queue.OutcomeAccepted
			if r.IntN(10) == 0 {
				o = queue.OutcomeDeferred
			} else {
				say("ANSWER %s", e.MessageID) // the peer has it
			}
			if err := p.Done(now, 1, e.MessageID, o); err != nil {
				fail("DONE", err)
			}
		}
	}
}

func TestPeerQueueKill9(t *testing.T) {
	if dir := os.Getenv(pqKillChildEnv); dir != "" {
		pqKillChild(dir, os.Getenv(pqKillRoundEnv))
		return
	}
	if testing.Short() {
		t.Skip("kill -9 test runs child processes; skipped in -short mode")
	}
	w := &pqWorld{t: t, dir: t.TempDir(), cfg: pqKillConfig(), answered: map[string]int{}, acked: map[string]bool{}}
	r := rand.New(rand.NewPCG(3, 4))
	bound := 0 // what the restarts may send again
	for round := range 6 {
		j, rp := w.resendable()
		bound += j + rp
		killAfter := 50 + r.IntN(3000) // acks to read before the kill
		cmd := exec.Command(os.Args[0], "-test.run=^TestPeerQueueKill9$", "-test.count=1")
		cmd.Env = append(os.Environ(), pqKillChildEnv+"="+w.dir, pqKillRoundEnv+"="+strconv.Itoa(round))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		acks, answers := 0, 0
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "FAILED") {
				t.Fatalf("round %d: child: %s", round, line)
			}
			f := strings.Fields(line)
			if len(f) != 2 {
				continue // test framework chatter
			}
			switch f[0] {
			case "ACK":
				w.acked[f[1]] = true
				if acks++; acks == killAfter {
					// Half the rounds: at once, right after an ack; the
					// others a random moment later, anywhere in the loop.
					var delay time.Duration
					if round%2 == 1 {
						delay = time.Duration(r.IntN(20000)) * time.Microsecond
					}
					time.AfterFunc(delay, func() { cmd.Process.Kill() })
				}
			case "ANSWER":
				w.answered[f[1]]++
				answers++
			}
		}
		cmd.Wait()
		if acks < killAfter {
			t.Fatalf("round %d: child died after %d acks, before the kill", round, acks)
		}
		t.Logf("round %d: killed after %d acks, %d answers; files %v", round, acks, answers, w.files())
	}
	j, rp := w.resendable()
	bound += j + rp
	w.now = time.Now()
	w.open()
	w.drain()
	lost, dups := 0, 0
	for id := range w.acked {
		if w.answered[id] == 0 {
			lost++
			if lost <= 10 {
				t.Errorf("%s was acknowledged upstream and never reached the peer", id)
			}
		}
	}
	for _, n := range w.answered {
		dups += max(0, n-1)
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged articles lost", lost, len(w.acked))
	}
	if dups > bound {
		t.Errorf("%d duplicates, more than the %d lines the restarts resent", dups, bound)
	}
	if got := w.files(); len(got) != 0 {
		t.Errorf("files left after the drain: %v", got)
	}
	t.Logf("%d acknowledged, all answered; %d duplicates (bound %d)", len(w.acked), dups, bound)
}
