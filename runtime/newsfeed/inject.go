package newsfeed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/newsflow/newsflow/machine/ingest"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/spoolfs"
)

// InjectResult counts what Inject did with the articles it was given.
type InjectResult struct {
	Accepted int
	Refused  int // not wanted: stored already (the history has it), as ingest says 438/435
	Rejected int
	Reasons  map[string]int // rejection reason -> count
	// Notes names each refused or rejected article with its reason, the
	// first maxInjectNotes of them; Unnoted counts the rest.
	Notes   []InjectNote
	Unnoted int
}

// InjectNote is one article inject did not store, and why.
type InjectNote struct {
	Verdict   string // "refused" or "rejected"
	MessageID string // "" when the article has none that parses
	Reason    string
}

// String is "refused <id>: already in history".
func (n InjectNote) String() string {
	id := n.MessageID
	if id == "" {
		id = "(no Message-ID)"
	}
	return n.Verdict + " " + id + ": " + n.Reason
}

// maxInjectNotes bounds the notes one result keeps: re-injecting a large
// batch refuses every article, and the counts say the rest.
const maxInjectNotes = 1000

// Add adds o's counts and notes to r.
func (r *InjectResult) Add(o InjectResult) {
	r.Accepted += o.Accepted
	r.Refused += o.Refused
	r.Rejected += o.Rejected
	for k, v := range o.Reasons {
		if r.Reasons == nil {
			r.Reasons = map[string]int{}
		}
		r.Reasons[k] += v
	}
	for _, n := range o.Notes {
		r.note(n)
	}
	r.Unnoted += o.Unnoted
}

func (r *InjectResult) note(n InjectNote) {
	if len(r.Notes) < maxInjectNotes {
		r.Notes = append(r.Notes, n)
	} else {
		r.Unnoted++
	}
}

// reject counts an article without a Message-ID not stored for reason.
func (r *InjectResult) reject(reason string) { r.rejectID("", reason) }

// rejectID counts article id not stored for reason; id may be "".
func (r *InjectResult) rejectID(id, reason string) {
	r.Rejected++
	if r.Reasons == nil {
		r.Reasons = map[string]int{}
	}
	r.Reasons[reason]++
	r.note(InjectNote{Verdict: "rejected", MessageID: id, Reason: reason})
}

// refuse counts an article not wanted (stored already) for reason.
func (r *InjectResult) refuse(id, reason string) {
	r.Refused++
	r.note(InjectNote{Verdict: "refused", MessageID: id, Reason: reason})
}

// String summarises the counts: "accepted 3 refused 1 rejected 2
// (missing Message-ID: 1, ...)".
func (r InjectResult) String() string {
	s := fmt.Sprintf("accepted %d refused %d rejected %d", r.Accepted, r.Refused, r.Rejected)
	if len(r.Reasons) > 0 {
		keys := make([]string, 0, len(r.Reasons))
		for k := range r.Reasons {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s: %d", k, r.Reasons[k])
		}
		s += " (" + strings.Join(parts, "; ") + ")"
	}
	return s
}

// injectBatch is how many articles one group commit of inject carries.
const injectBatch = 512

// InjectFile stores the articles of an rnews batch (#! rnews N) or a
// single article file, with the same validation, history and fan-out as
// ingest. An error means the file could not be read to its end (the counts
// cover what was read before).
func (r *Relay) InjectFile(ctx context.Context, name string) (InjectResult, error) {
	f, err := os.Open(name)
	if err != nil {
		return InjectResult{}, fmt.Errorf("inject: %w", err)
	}
	defer f.Close()
	return r.InjectReader(ctx, f)
}

// InjectReader is InjectFile on a reader.
func (r *Relay) InjectReader(ctx context.Context, rd io.Reader) (InjectResult, error) {
	br := bufio.NewReaderSize(rd, 64<<10)
	prefix, _ := br.Peek(8)
	if !proto.IsRnewsBatch(prefix) {
		data, err := io.ReadAll(io.LimitReader(br, int64(r.cfg.MaxArticleSize)+1))
		if err != nil {
			return InjectResult{}, fmt.Errorf("inject: %w", err)
		}
		if int64(len(data)) > int64(r.cfg.MaxArticleSize) {
			var res InjectResult
			res.reject("too large")
			return res, nil
		}
		return r.Inject(ctx, [][]byte{data}), nil
	}
	rn := proto.NewRnewsReader(br, int(r.cfg.MaxArticleSize))
	var total InjectResult
	var batch [][]byte
	for {
		a, err := rn.Next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, proto.ErrRnewsTooLarge) {
			total.reject("too large")
			return total, fmt.Errorf("inject: %w", err)
		}
		if err != nil {
			total.Add(r.Inject(ctx, batch))
			return total, fmt.Errorf("inject: %w", err)
		}
		batch = append(batch, a)
		if len(batch) == injectBatch {
			total.Add(r.Inject(ctx, batch))
			batch = nil
		}
	}
	total.Add(r.Inject(ctx, batch))
	return total, nil
}

// Inject validates and stores native (or wire, undotted) articles, routes
// them to the peers and waits until they are durable: one group commit for
// the lot.
func (r *Relay) Inject(ctx context.Context, articles [][]byte) InjectResult {
	var res InjectResult
	now := r.now()
	type wait struct {
		id string
		ch chan ingest.Result
	}
	var waits []wait
	r.com.start()
	var buf []byte
	seen := map[string]bool{}
	for _, a := range articles {
		h, _, err := proto.ParseHeaders(a)
		if err != nil {
			res.reject("bad header")
			r.log.Info("inject: article rejected", "reason", err)
			continue
		}
		id, err := h.MessageID()
		if err != nil {
			res.reject("bad Message-ID")
			r.log.Info("inject: article rejected", "reason", err)
			continue
		}
		if err := proto.ValidateArticle(h, proto.ValidateOptions{
			PathIdentity: r.cfg.PathHost, Now: now, MaxFuture: -1,
			Size: int64(len(a)), MaxSize: int64(r.cfg.MaxArticleSize),
		}); err != nil {
			res.rejectID(id, err.Error())
			r.log.Info("inject: article rejected", "id", id, "reason", err)
			continue
		}
		if seen[id] {
			res.refuse(id, "twice in the input")
			continue
		}
		seen[id] = true
		switch r.spool.History().Status(id, now) {
		case spoolfs.Stored:
			res.refuse(id, "already in history")
			continue
		case spoolfs.Pending:
			res.refuse(id, "being stored from another source")
			continue
		case spoolfs.Rejected:
			res.refuse(id, "rejected before (in history)")
			continue
		}
		ch := make(chan ingest.Result, 1)
		out, queued := r.store(now, id, a, h, &buf, pendingArt{done: ch})
		buf = nil
		if !queued {
			switch out.Outcome {
			case ingest.StoreDuplicate:
				res.refuse(id, "already in history")
			default:
				res.rejectID(id, strings.ToLower(strings.TrimSpace(out.Reason)))
			}
			continue
		}
		waits = append(waits, wait{id, ch})
	}
	for _, w := range waits {
		select {
		case out := <-w.ch:
			if out.Outcome == ingest.StoreAccepted {
				res.Accepted++
			} else {
				res.rejectID(w.id, strings.ToLower(out.Reason))
			}
		case <-ctx.Done():
			res.rejectID(w.id, "interrupted")
		}
	}
	return res
}
