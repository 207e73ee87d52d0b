package cluster

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// TestBatchDuplicates: heads published in one fast batch keep each
// article's duplicate decision. Another node stored two of the
// message-ids first; the batch fails at the first of them (gap mode
// "fail"), so the server stores what came before it, and the articles
// after it are published again alone: every new one is stored, every
// taken one is ErrDuplicate.
func TestBatchDuplicates(t *testing.T) {
	s, e := testStore(t, Settings{Shards: 1, Replicas: 1})
	other := openStore(t, e, Settings{Shards: 1, Replicas: 1, Node: "n2"})
	if !s.batched {
		t.Fatal("the shard stream does not take fast batches (allow_batched)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	taken := map[string]bool{"<b1@t>": true, "<b4@t>": true}
	for id := range taken {
		if err := other.Put(ctx, id, []byte("other's "+id+"\r\n.\r\n"), nil); err != nil {
			t.Fatal(err)
		}
	}
	ids := []string{"<b0@t>", "<b1@t>", "<b2@t>", "<b3@t>", "<b4@t>", "<b5@t>"}
	var ps []*Pending
	for _, id := range ids {
		p, err := s.Publish(id, []byte("mine "+id+"\r\n.\r\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	s.pub.mu.Lock()
	open := 0
	for _, ws := range s.pub.queued {
		open += len(ws)
	}
	s.pub.mu.Unlock()
	if open != len(ids) {
		t.Errorf("%d heads queued for a batch before Commit, want %d", open, len(ids))
	}
	s.Commit()
	for i, p := range ps {
		err := p.Wait(ctx)
		switch {
		case taken[ids[i]] && !errors.Is(err, ErrDuplicate):
			t.Errorf("%s, stored by the other node: %v, want ErrDuplicate", ids[i], err)
		case !taken[ids[i]] && err != nil:
			t.Errorf("%s: %v, want stored", ids[i], err)
		}
	}
	for _, id := range ids {
		body, err := s.Get(ctx, id)
		want := "mine " + id + "\r\n.\r\n"
		if taken[id] {
			want = "other's " + id + "\r\n.\r\n"
		}
		if err != nil || !bytes.Equal(body, []byte(want)) {
			t.Errorf("Get %s = %q, %v; want %q", id, body, err, want)
		}
	}
	s.pub.mu.Lock()
	left := len(s.pub.batches) + len(s.pub.waiting)
	s.pub.mu.Unlock()
	if left != 0 {
		t.Errorf("%d batches or publishes still wait for answers, want 0", left)
	}
}
