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
}

// Add adds o's counts to r.
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
}

func (r *InjectResult) reject(reason string) {
	r.Rejected++
	if r.Reasons == nil {
		r.Reasons = map[string]int{}
	}
	r.Reasons[reason]++
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
	var waits []chan ingest.Result
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
			res.reject(err.Error())
			r.log.Info("inject: article rejected", "id", id, "reason", err)
			continue
		}
		if seen[id] {
			res.Refused++
			continue
		}
		seen[id] = true
		switch r.spool.History().Status(id, now) {
		case spoolfs.Stored, spoolfs.Pending, spoolfs.Rejected:
			res.Refused++
			continue
		}
		ch := make(chan ingest.Result, 1)
		out, queued := r.store(now, id, a, h, &buf, pendingArt{done: ch})
		buf = nil
		if !queued {
			switch out.Outcome {
			case ingest.StoreDuplicate:
				res.Refused++
			default:
				res.reject(strings.ToLower(strings.TrimSpace(out.Reason)))
			}
			continue
		}
		waits = append(waits, ch)
	}
	for _, ch := range waits {
		select {
		case out := <-ch:
			if out.Outcome == ingest.StoreAccepted {
				res.Accepted++
			} else {
				res.reject(strings.ToLower(out.Reason))
			}
		case <-ctx.Done():
			res.reject("interrupted")
		}
	}
	return res
}
