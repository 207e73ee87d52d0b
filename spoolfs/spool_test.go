package spoolfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPutGetRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		opts SpoolOptions
		n    int // articles
		size int // approximate bytes each
	}{
		{"one small article", SpoolOptions{}, 1, 10},
		{"many 2K articles in one segment", SpoolOptions{}, 200, 2000},
		{"rotation every few articles", SpoolOptions{SegmentSize: 8 << 10}, 100, 2000},
		{"article larger than a segment", SpoolOptions{SegmentSize: 4 << 10}, 5, 20000},
		{"flush on every put", SpoolOptions{FlushSize: 1}, 50, 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, tc.opts)
			toks := make([]Token, tc.n)
			wires := make([][]byte, tc.n)
			for i := range tc.n {
				id := msgID(tc.name, i)
				wires[i] = wireArticle(id, tc.size)
				toks[i] = putT(t, s, id, wires[i], t0.Add(time.Duration(i)*time.Second))
			}
			// Readable before Sync (from the buffer or the page cache)...
			for i := range tc.n {
				wantArticle(t, s, "before Sync", toks[i], wires[i])
			}
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			// ...after it, and after a clean restart.
			for i := range tc.n {
				wantArticle(t, s, "after Sync", toks[i], wires[i])
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openT(t, dir, tc.opts)
			defer s.Close()
			for i := range tc.n {
				wantArticle(t, s, "after reopen", toks[i], wires[i])
				e, ok := s.History().Lookup(msgID(tc.name, i))
				want := Entry{Token: toks[i], Arrived: t0.Add(time.Duration(i) * time.Second), Status: Stored}
				if !ok {
					t.Fatalf("Lookup(%s) after reopen: missing", msgID(tc.name, i))
				}
				if diff := cmp.Diff(want, e); diff != "" {
					t.Fatalf("Lookup(%s) after reopen (-want +got):\n%s", msgID(tc.name, i), diff)
				}
			}
		})
	}
}

func TestPutRefuses(t *testing.T) {
	s := openT(t, t.TempDir(), SpoolOptions{MaxArticleSize: 1000})
	defer s.Close()
	good := wireArticle("<good@x>", 100)
	putT(t, s, "<good@x>", good, t0)
	tests := []struct {
		name  string
		msgid string
		wire  []byte
		want  error
	}{
		{"duplicate", "<good@x>", good, ErrDuplicate},
		{"not terminated", "<a@x>", []byte("Subject: x\r\n\r\nbody\r\n"), ErrBadArticle},
		{"LF only terminator", "<b@x>", []byte("Subject: x\n\nbody\n.\n"), ErrBadArticle},
		{"too large", "<c@x>", wireArticle("<c@x>", 2000), ErrBadArticle},
		{"message-id without brackets", "c@x", good, ErrBadArticle},
		{"message-id with space", "<c @x>", good, ErrBadArticle},
		{"message-id over 250 octets", "<" + string(bytes.Repeat([]byte("a"), 250)) + ">", good, ErrBadArticle},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := s.Put(tc.msgid, tc.wire, t0)
			if !errors.Is(err, tc.want) {
				t.Errorf("Put(%.30q) = %v, %v; want %v", tc.msgid, tok, err, tc.want)
			}
		})
	}
}

// TestStatusLifecycle walks one id through what CHECK sees, step by step.
func TestStatusLifecycle(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{ReserveTimeout: time.Minute})
	h := s.History()
	const id = "<life@x>"
	want := func(what string, now time.Time, st Status) {
		t.Helper()
		if got := h.Status(id, now); got != st {
			t.Fatalf("%s: Status = %v, want %v", what, got, st)
		}
	}
	want("never offered", t0, Unknown)
	if st, ok := h.Reserve(id, t0); !ok || st != Unknown {
		t.Fatalf("first Reserve = %v, %v; want unknown, true", st, ok)
	}
	want("reserved by CHECK", t0, Reserved)
	if st, ok := h.Reserve(id, t0.Add(time.Second)); ok || st != Reserved {
		t.Fatalf("second Reserve = %v, %v; want reserved, false", st, ok)
	}
	want("reservation timed out", t0.Add(time.Minute), Unknown)
	h.Release(id)
	want("released", t0, Unknown)
	h.Reserve(id, t0)
	tok := putT(t, s, id, wireArticle(id, 100), t0)
	want("stored, not synced", t0, Pending)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	want("synced", t0, Stored)
	if st, ok := h.Reserve(id, t0); ok || st != Stored {
		t.Fatalf("Reserve of a stored id = %v, %v", st, ok)
	}
	if err := s.Reject(id, t0); err != nil {
		t.Fatal(err)
	}
	want("reject of a stored id changes nothing", t0, Stored)

	const bad = "<spam@x>"
	h.Reserve(bad, t0)
	if err := s.Reject(bad, t0); err != nil {
		t.Fatal(err)
	}
	want2 := func(what string, st Status) {
		t.Helper()
		if got := h.Status(bad, t0); got != st {
			t.Fatalf("%s: Status(%s) = %v, want %v", what, bad, got, st)
		}
	}
	want2("rejected", Rejected)
	if _, err := s.Put(bad, wireArticle(bad, 100), t0); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("Put of a rejected id: %v, want ErrDuplicate", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openT(t, dir, SpoolOptions{})
	defer s.Close()
	h = s.History()
	want("after restart", t0, Stored)
	want2("after restart", Rejected)
	if e, _ := h.Lookup(id); e.Token != tok {
		t.Fatalf("token after restart = %v, want %v", e.Token, tok)
	}
	for _, x := range []string{id, bad} {
		if _, err := s.Put(x, wireArticle(x, 100), t0); !errors.Is(err, ErrDuplicate) {
			t.Errorf("Put(%s) after restart: %v, want ErrDuplicate", x, err)
		}
	}
}

func TestGetBadTokens(t *testing.T) {
	s := openT(t, t.TempDir(), SpoolOptions{})
	defer s.Close()
	a := putT(t, s, "<a@x>", wireArticle("<a@x>", 300), t0)
	b := putT(t, s, "<b@x>", wireArticle("<b@x>", 300), t0)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tok  Token
		want error
	}{
		{"zero token", Token{}, ErrNotFound},
		{"segment never created", Token{Seg: 9, Off: a.Off, Len: a.Len}, ErrNotFound},
		{"past the end", Token{Seg: 1, Off: b.Off + 10000, Len: 10}, ErrNotFound},
		{"length differs from record", Token{Seg: 1, Off: a.Off, Len: a.Len - 1}, ErrNotFound},
		{"offset inside an article", Token{Seg: 1, Off: a.Off + 5, Len: a.Len}, ErrCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Get(tc.tok); !errors.Is(err, tc.want) {
				t.Errorf("Get(%v) = %v, want %v", tc.tok, err, tc.want)
			}
			if x, err := s.Section(tc.tok); !errors.Is(err, tc.want) {
				t.Errorf("Section(%v) = %v, %v; want %v", tc.tok, x, err, tc.want)
			}
		})
	}
}

func TestSection(t *testing.T) {
	s := openT(t, t.TempDir(), SpoolOptions{})
	defer s.Close()
	wire := wireArticle("<sec@x>", 5000)
	tok := putT(t, s, "<sec@x>", wire, t0)
	// Still in the append buffer: Section writes it out first.
	x, err := s.Section(tok)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	got, err := io.ReadAll(x.Reader())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wire) {
		t.Fatalf("Section bytes differ from the article")
	}
	// The range in the file is the wire article itself: offset and length
	// are the token's.
	if x.Offset != int64(tok.Off) || x.Length != int64(tok.Len) {
		t.Fatalf("Section = %d+%d, want the token's %d+%d", x.Offset, x.Length, tok.Off, tok.Len)
	}
}

// TestConcurrentPutSameID: of several connections storing one id at once,
// exactly one succeeds; the rest get ErrDuplicate.
func TestConcurrentPutSameID(t *testing.T) {
	s := openT(t, t.TempDir(), SpoolOptions{})
	defer s.Close()
	const conns, ids = 8, 300
	var stored [ids]atomic.Int32
	var wg sync.WaitGroup
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				j := (i*7 + c*13) % ids // each connection in its own order
				id := msgID("race", j)
				_, err := s.Put(id, wireArticle(id, 200), t0)
				switch {
				case err == nil:
					stored[j].Add(1)
				case !errors.Is(err, ErrDuplicate):
					t.Errorf("Put(%s): %v", id, err)
				}
				if i%50 == 0 {
					if err := s.Sync(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	for j := range ids {
		if n := stored[j].Load(); n != 1 {
			t.Errorf("%s stored %d times, want once", msgID("race", j), n)
		}
		e, ok := s.History().Lookup(msgID("race", j))
		if !ok {
			t.Fatalf("%s missing from history", msgID("race", j))
		}
		wantArticle(t, s, "concurrent put", e.Token, wireArticle(msgID("race", j), 200))
	}
}

// TestReserveRace: when connections answer CHECK for one id at once, exactly
// one may ask for the article; the others answer 431 (Reserved).
func TestReserveRace(t *testing.T) {
	s := openT(t, t.TempDir(), SpoolOptions{})
	defer s.Close()
	h := s.History()
	const conns, ids = 16, 200
	var won [ids]atomic.Int32
	var others [ids][Rejected + 1]atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := range ids {
				id := msgID("check", j)
				st, ok := h.Reserve(id, t0)
				if ok {
					won[j].Add(1)
					if j%3 == 0 {
						if err := s.Reject(id, t0); err != nil {
							t.Error(err)
						}
					} else if _, err := s.Put(id, wireArticle(id, 100), t0); err != nil {
						t.Error(err)
					}
					continue
				}
				others[j][st].Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	for j := range ids {
		if n := won[j].Load(); n != 1 {
			t.Errorf("%s reserved %d times, want once", msgID("check", j), n)
		}
		if n := others[j][Unknown].Load(); n != 0 {
			t.Errorf("%s: %d refused reservations reported Unknown", msgID("check", j), n)
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	for j := range ids {
		want := Stored
		if j%3 == 0 {
			want = Rejected
		}
		if got := h.Status(msgID("check", j), t0); got != want {
			t.Errorf("Status(%s) = %v, want %v", msgID("check", j), got, want)
		}
	}
}

// TestSyncGroupCommit: Syncs from many goroutines all succeed and, when
// they return, cover their own Puts.
func TestSyncGroupCommit(t *testing.T) {
	s := openT(t, t.TempDir(), SpoolOptions{SegmentSize: 64 << 10})
	defer s.Close()
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				id := msgID(fmt.Sprintf("gc%d", c), i)
				putT(t, s, id, wireArticle(id, 1000), t0)
				if err := s.Sync(); err != nil {
					t.Error(err)
					return
				}
				if st := s.History().Status(id, t0); st != Stored {
					t.Errorf("after Sync, Status(%s) = %v, want stored", id, st)
				}
			}
		}()
	}
	wg.Wait()
}

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{})
	defer s.Close()
	if s2, err := OpenSpool(dir, SpoolOptions{}); err == nil {
		s2.Close()
		t.Fatal("second OpenSpool of a spool in use succeeded")
	}
}

func TestScan(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{SegmentSize: 16 << 10})
	defer s.Close()
	type rec struct {
		Tok Token
		ID  string
	}
	var want []rec
	for i := range 30 {
		id := msgID("scan", i)
		want = append(want, rec{putT(t, s, id, wireArticle(id, 1500), t0), id})
		if i == 10 {
			s.Reject("<rejected@x>", t0) // not an article: Scan skips it
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	collect := func(from Position) ([]rec, Position) {
		var got []rec
		end, err := s.Scan(from, func(r Record) error {
			if !bytes.Equal(r.Wire, wireArticle(r.MsgID, 1500)) {
				t.Errorf("Scan: wire of %s differs", r.MsgID)
			}
			got = append(got, rec{r.Token, r.MsgID})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, end
	}
	got, end := collect(Position{})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Scan from the start (-want +got):\n%s", diff)
	}
	for i := 30; i < 35; i++ {
		id := msgID("scan", i)
		want = append(want, rec{putT(t, s, id, wireArticle(id, 1500), t0), id})
	}
	if got, _ := collect(end); len(got) != 0 {
		t.Fatalf("Scan saw %d articles not yet synced", len(got))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	got, _ = collect(end)
	if diff := cmp.Diff(want[30:], got); diff != "" {
		t.Fatalf("Scan from the previous end (-want +got):\n%s", diff)
	}
}

// TestConcurrentEverything runs ingest (Put, Reject, Sync), readers (Get,
// Section, Lookup), spool expiry and history expiry at once, for the race
// detector, then checks that every article Put is either readable or
// expired, and never different.
func TestConcurrentEverything(t *testing.T) {
	dir := t.TempDir()
	opts := SpoolOptions{SegmentSize: 32 << 10, FlushSize: 4 << 10, MaxOpenSegments: 4}
	s := openT(t, dir, opts)
	const writers, each = 4, 150
	toks := make([][]Token, writers)
	var wg, readers sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		toks[w] = make([]Token, each)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := msgID(fmt.Sprintf("all%d", w), i)
				toks[w][i] = putT(t, s, id, wireArticle(id, 900), t0.Add(time.Duration(i)*time.Second))
				if i%10 == 0 {
					if err := s.Reject(msgID(fmt.Sprintf("rej%d", w), i), t0); err != nil {
						t.Error(err)
					}
				}
				if i%7 == 0 {
					if err := s.Sync(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	readers.Add(3)
	go func() { // reader: random earlier articles, through Get and Section
		defer readers.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			w, i := n%writers, (n*31)%each
			id := msgID(fmt.Sprintf("all%d", w), i)
			e, ok := s.History().Lookup(id)
			if !ok {
				continue
			}
			if b, err := s.Get(e.Token); err == nil && !bytes.Equal(b, wireArticle(id, 900)) {
				t.Errorf("Get(%s) returned other bytes", id)
			} else if err != nil && !errors.Is(err, ErrExpired) {
				t.Errorf("Get(%s): %v", id, err)
			}
			if x, err := s.Section(e.Token); err == nil {
				x.Close()
			} else if !errors.Is(err, ErrExpired) {
				t.Errorf("Section(%s): %v", id, err)
			}
		}
	}()
	go func() { // spool expiry by size
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Expire(t0, 0, 200<<10); err != nil {
				t.Error(err)
			}
		}
	}()
	go func() { // history expiry of rejected ids
		defer readers.Done()
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.History().Expire(t0.Add(time.Hour), 0, time.Minute); err != nil {
				t.Error(err)
			}
			time.Sleep(time.Millisecond) // not an assertion: keeps compaction from monopolising the log
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, opts)
	defer s.Close()
	for w := range writers {
		for i := range each {
			id := msgID(fmt.Sprintf("all%d", w), i)
			e, ok := s.History().Lookup(id)
			if !ok || e.Token != toks[w][i] || e.Status != Stored {
				t.Fatalf("%s after reopen: %+v, %v; want stored at %v", id, e, ok, toks[w][i])
			}
			b, err := s.Get(e.Token)
			switch {
			case errors.Is(err, ErrExpired):
			case err != nil:
				t.Fatalf("Get(%s): %v", id, err)
			case !bytes.Equal(b, wireArticle(id, 900)):
				t.Fatalf("Get(%s) returned other bytes", id)
			}
		}
	}
}

// TestHistoryPendingSweep stores many articles with a Sync every so often
// and checks that each answers Pending until the Sync that covers it and
// Stored after, and that the map of entries not yet in the log stays
// bounded by what one Sync covers.
func TestHistoryPendingSweep(t *testing.T) {
	s := openT(t, t.TempDir(), SpoolOptions{})
	defer s.Close()
	h := s.History()
	const n, every = 5000, 700
	for i := range n {
		id := msgID("pend", i)
		putT(t, s, id, wireArticle(id, 200), t0)
		if st := h.Status(id, t0); st != Pending {
			t.Fatalf("article %d before its Sync: %s, want pending", i, st)
		}
		if i%every == every-1 {
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			for j := i - every + 1; j <= i; j++ {
				if st := h.Status(msgID("pend", j), t0); st != Stored {
					t.Fatalf("article %d after the Sync: %s, want stored", j, st)
				}
			}
		}
	}
	h.mu.RLock()
	size := len(h.recent)
	h.mu.RUnlock()
	if size > every {
		t.Errorf("%d ids in the map of entries not yet logged, want at most %d", size, every)
	}
}
