package ingest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
)

// TestRandomAnswerOrder: however the owner orders its answers (a history
// lookup now, a batch fsync later), responses leave in command order, one
// per command, with the right message-id.
func TestRandomAnswerOrder(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		g := New(t0, Config{PathHost: "relay.example", MaxPending: 1 + rng.IntN(20)})
		g.AppendOutgoing(nil)
		var in strings.Builder
		var want []string // "code id" per command
		for i := 0; i < 60; i++ {
			id := fmt.Sprintf("<r%d.%d@x>", seed, i)
			switch rng.IntN(4) {
			case 0:
				in.WriteString("CHECK " + id + "\r\n")
				want = append(want, "238 "+id)
			case 1:
				in.WriteString(takethis(id, article(id)))
				want = append(want, "239 "+id)
			case 2: // rejected by the machine, answered at once
				in.WriteString(takethis(id, article(id, "-From")))
				want = append(want, "439 "+id)
			case 3:
				in.WriteString("DATE\r\n")
				want = append(want, "111 20000101000000")
			}
		}
		stream := []byte(in.String())
		var out []byte
		var owed []Event
		answer := func() {
			// Answer a random part of what is owed, in random order.
			rng.Shuffle(len(owed), func(i, j int) { owed[i], owed[j] = owed[j], owed[i] })
			k := rng.IntN(len(owed) + 1)
			for _, ev := range owed[:k] {
				var err error
				switch e := ev.(type) {
				case Check:
					err = g.Decide(t0, e.Seq, Want)
				case Article:
					err = g.Stored(t0, e.Seq, Result{Outcome: StoreAccepted})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			owed = append(owed[:0], owed[k:]...)
		}
		collect := func() {
			for {
				ev, ok := g.NextEvent()
				if !ok {
					return
				}
				switch ev.(type) {
				case Check, Article:
					owed = append(owed, ev)
				}
			}
		}
		for steps := 0; (len(stream) > 0 || len(owed) > 0 || g.Pending() > 0) && steps < 100000; steps++ {
			if len(stream) > 0 && !g.Paused() {
				n := min(len(stream), 1+rng.IntN(300))
				if err := g.Receive(t0, stream[:n]); err != nil {
					t.Fatal(err)
				}
				stream = stream[n:]
			}
			collect()
			answer()
			collect()
			out = g.AppendOutgoing(out)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSuffix(string(out), "\r\n"), "\r\n") {
			f := strings.Fields(l)
			if len(f) > 1 && f[0] != "111" {
				got = append(got, f[0]+" "+f[1])
			} else {
				got = append(got, l)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("seed %d: responses (-want +got):\n%s", seed, diff)
		}
	}
}

// TestDataNotShared: articles carved from one slab stay intact while later
// articles, rejected ones (whose space is reused) and large ones arrive.
func TestDataNotShared(t *testing.T) {
	g := New(t0, Config{PathHost: "relay.example"})
	var kept []Article
	var want []string
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("<k%d@x>", i)
		var art string
		switch {
		case i%7 == 3:
			art = article(id, "-Subject") // rejected: its space is reused
		case i%50 == 10:
			art = article(id, "body:"+strings.Repeat(fmt.Sprintf("large %d\r\n", i), 8000)) // beyond a slab tail
		default:
			art = article(id, fmt.Sprintf("body:%s\r\n", strings.Repeat(fmt.Sprint(i), 1+i%300)))
		}
		if err := g.Receive(t0, []byte(takethis(id, art))); err != nil {
			t.Fatal(err)
		}
		for {
			ev, ok := g.NextEvent()
			if !ok {
				break
			}
			if a, ok := ev.(Article); ok {
				kept = append(kept, a)
				want = append(want, art)
				g.Stored(t0, a.Seq, Result{Outcome: StoreAccepted})
				// An owner appending to Data must not reach the next article.
				_ = append(a.Data, "XXXXXXXX"...)
				_ = append(a.Header.Fields, proto.HeaderField{})
			}
		}
	}
	if len(kept) < 150 {
		t.Fatalf("only %d articles accepted", len(kept))
	}
	for i, a := range kept {
		if string(a.Data) != want[i] {
			t.Fatalf("article %s changed after later articles arrived", a.MessageID)
		}
		if got := a.Header.Get("Message-ID"); got != a.MessageID {
			t.Fatalf("article %s: header now says Message-ID %q", a.MessageID, got)
		}
	}
}
