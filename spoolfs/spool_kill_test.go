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
)

// The kill -9 test re-executes the test binary as a child that stores
// articles in a loop and prints a line for each one after the Sync that made
// it durable: exactly when newsfeed would send 239. The parent SIGKILLs the
// child at a random point, reopens the spool, and checks that every article
// the child reported is there, intact, at the reported token.

const (
	killChildEnv = "NEWSFLOW_SPOOLFS_KILL_CHILD" // spool directory, set in the child
	killRoundEnv = "NEWSFLOW_SPOOLFS_KILL_ROUND"
	killOpts     = 256 << 10 // segment size: rotations and checkpoints happen often
)

// killArticleSize derives an article's size from its id, so the parent can
// regenerate the bytes.
func killArticleSize(id string) int {
	n, _ := strconv.Atoi(id[strings.LastIndexByte(id, '.')+1 : strings.IndexByte(id, '@')])
	return 100 + (n*7919)%9000
}

// killChild is the child's loop; it only ends by being killed.
func killChild(dir, round string) {
	// In odd rounds a small FlushSize puts unsynced records in the kernel,
	// where they survive the kill: open must then find them by scanning the
	// spool. In even rounds records reach the kernel only through Sync, so
	// an ack for anything Sync did not write is caught.
	opts := SpoolOptions{SegmentSize: killOpts}
	if n, _ := strconv.Atoi(round); n%2 == 1 {
		opts.FlushSize = 8 << 10
	}
	s, err := OpenSpool(dir, opts)
	if err != nil {
		fmt.Println("OPEN FAILED", err)
		os.Exit(2)
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; {
		batch := 1 + r.IntN(40)
		var lines []string
		for range batch {
			id := fmt.Sprintf("<kill%s.%d@test>", round, i)
			i++
			tok, err := s.Put(id, wireArticle(id, killArticleSize(id)), t0)
			if err != nil {
				fmt.Println("PUT FAILED", err)
				os.Exit(2)
			}
			lines = append(lines, "DURABLE "+id+" "+tok.String())
		}
		if err := s.Sync(); err != nil {
			fmt.Println("SYNC FAILED", err)
			os.Exit(2)
		}
		for _, l := range lines {
			out.WriteString(l + "\n")
		}
		out.Flush() // the "ack": only after Sync returned
	}
}

func TestKill9(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		killChild(dir, os.Getenv(killRoundEnv))
		return
	}
	if testing.Short() {
		t.Skip("kill -9 test writes a few MB per round; skipped in -short mode")
	}
	dir := t.TempDir()
	acked := map[string]Token{}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 5 {
		killAfter := 20 + r.IntN(1500) // acks to read before the kill
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9$", "-test.count=1")
		cmd.Env = append(os.Environ(), killChildEnv+"="+dir, killRoundEnv+"="+strconv.Itoa(round))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		n := 0
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "FAILED") {
				t.Fatalf("round %d: child: %s", round, line)
			}
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != "DURABLE" {
				continue // test framework chatter
			}
			tok, err := ParseToken(f[2])
			if err != nil {
				t.Fatalf("round %d: child printed %q: %v", round, line, err)
			}
			acked[f[1]] = tok
			if n++; n == killAfter {
				// Even rounds: SIGKILL at once, right after an ack, when the
				// child has just returned from Sync (an ack for data Sync did
				// not write would be caught here). Odd rounds: a random moment
				// later, anywhere in the loop: Put, write, fdatasync,
				// rotation, checkpoint.
				var delay time.Duration
				if round%2 == 1 {
					delay = time.Duration(r.IntN(20000)) * time.Microsecond
				}
				time.AfterFunc(delay, func() { cmd.Process.Kill() })
			}
		}
		cmd.Wait()
		if n < killAfter {
			t.Fatalf("round %d: child died after %d acks, before the kill", round, n)
		}

		s := openT(t, dir, SpoolOptions{SegmentSize: killOpts})
		for id, tok := range acked {
			e, ok := s.History().Lookup(id)
			if !ok || e.Status != Stored || e.Token != tok {
				t.Fatalf("round %d: acked %s: Lookup = %+v, %v; want stored at %v", round, id, e, ok, tok)
			}
			wantArticle(t, s, fmt.Sprintf("round %d: acked %s", round, id), tok, wireArticle(id, killArticleSize(id)))
		}
		// The history may hold more than was acked: articles written to the
		// kernel but not yet synced survive a process kill and are found.
		t.Logf("round %d: killed after %d acks; %d acked articles verified, %d in history", round, n, len(acked), s.History().Len())
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
