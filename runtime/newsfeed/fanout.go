package newsfeed

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/spoolfs"
)

// # The fan-out position
//
// The group commit syncs the spool and acknowledges; the peers' queue
// files are synced later, at most fanoutEvery apart (commit.go). A crash
// or power loss before that leaves articles that are durable in the spool
// (the history refuses them when upstream offers them again) but in no
// peer's queue: without more, they would never be fed. So the relay keeps, in
// fanout.pos, a spool position before which every article is durably in
// the queues of the peers that want it, and at start it routes every
// article stored after that position again (Spool.Scan), but not to a peer
// whose files already hold it (queuedSince): after a kill -9 every line
// written is still there, so no article is queued twice; after a power loss
// an article whose line was lost is queued again. The position is written
// at most every fanoutEvery, and when the relay falls idle, fanoutEvery
// after its last round, so little is left to route.
//
// The position written after a commit round is the spool's end (PutEnd)
// when the round took its batch: every article before it was in that round
// or an earlier one, all of which succeeded (a failed round freezes the
// position for the rest of the run), and the queues they were offered to
// were synced just before the position is written (a failed sync freezes
// it too). This is what lets the group commit acknowledge an article after
// one fdatasync, the spool's: its queue entries are durable as the spool
// record after the position until the queues' files hold them. Puts and the hand-over to the committer happen
// under putMu, which the committer also holds while it takes a batch, so
// no stored article can be missing from the batches.

// fanoutEvery bounds how often fanout.pos is rewritten.
const fanoutEvery = 100 * time.Millisecond

func fanoutFile(spool string) string { return filepath.Join(spool, "fanout.pos") }

// readFanout reads the position; ok is false when there is none.
func readFanout(spool string) (spoolfs.Position, bool, error) {
	b, err := os.ReadFile(fanoutFile(spool))
	if errors.Is(err, fs.ErrNotExist) {
		return spoolfs.Position{}, false, nil
	}
	if err != nil {
		return spoolfs.Position{}, false, fmt.Errorf("relay: %w", err)
	}
	var p spoolfs.Position
	if _, err := fmt.Sscanf(string(b), "%d %d\n", &p.Seg, &p.Off); err != nil {
		// Unreadable: scan from the start (duplicates, never losses).
		return spoolfs.Position{}, true, nil
	}
	return p, true, nil
}

// writeFanout records the position durably (spoolfs.WriteFileDurable:
// temp file, fsync, rename, fsync the directory).
func writeFanout(spool string, p spoolfs.Position) error {
	return spoolfs.WriteFileDurable(fanoutFile(spool), fmt.Appendf(nil, "%d %d\n", p.Seg, p.Off), 0o644)
}

// recoverFanout routes again every article stored after the fan-out
// position, makes the peers' queues durable, and moves the position to the
// spool's end. Run it at open, before anything else touches the queues.
func (r *Relay) recoverFanout() error {
	pos, ok, err := readFanout(r.cfg.Spool)
	if err != nil {
		return err
	}
	end := r.spool.End()
	if !ok {
		// A new spool (or one from before fanout.pos): nothing to redo.
		return r.moveFanoutAtOpen(end)
	}
	// A kill -9 loses nothing written: the peers' files may well hold
	// the articles after the position already. Those found there are
	// not offered again (made durable first, as the position will move
	// past them); only a power loss leaves some to route again.
	queued, err := r.queuedSince(fanoutFile(r.cfg.Spool))
	if err != nil {
		return err
	}
	now := r.now()
	byPeer := map[*peer]int{}
	n, skipped := 0, 0
	var routed []*peer
	end, err = r.spool.Scan(pos, func(rec spoolfs.Record) error {
		h, _, err := proto.ParseHeaders(rec.Wire)
		if err != nil {
			return nil // stored, so it parsed once; skip rather than stop
		}
		groups, _ := h.Newsgroups()
		routed = r.route(rec.MsgID, groups, h.Path(), int64(len(rec.Wire)), routed[:0])
		e := entryFor(rec.Token, rec.MsgID, int64(len(rec.Wire)), now)
		for _, p := range routed {
			if queued[p.cfg.Name][e.Token] {
				skipped++
				continue
			}
			if err := p.q.offer(now, []queue.Entry{e}); err != nil {
				return err
			}
			byPeer[p]++
		}
		n++
		return nil
	})
	if err != nil {
		return fmt.Errorf("relay: re-routing the spool after %v: %w", pos, err)
	}
	for p := range byPeer {
		if err := p.q.sync(); err != nil {
			if !isDiskFull(err) {
				return fmt.Errorf("relay: re-routing: %w", err)
			}
			// The position stays, so the next start routes them again.
			r.log.Warn("re-routing: no space to make the peers' queues durable; the next start routes these articles again",
				"articles", n, "err", err)
			return nil
		}
	}
	if n > 0 {
		r.log.Info("re-routed articles stored after the last fan-out position (a crash may have kept them from the peers' queues; peers refuse any duplicates)",
			"articles", n, "from", fmt.Sprint(pos), "already_queued", skipped)
	}
	return r.moveFanoutAtOpen(end)
}

// moveFanoutAtOpen writes the fan-out position at open. With the disk full
// the old position stays (the next start routes again what follows it:
// duplicates the peers refuse, never losses) and open goes on: a relay
// that cannot start would crash-loop under its supervisor.
func (r *Relay) moveFanoutAtOpen(end spoolfs.Position) error {
	err := writeFanout(r.cfg.Spool, end)
	if isDiskFull(err) {
		r.log.Warn("no space to record the fan-out position; kept the old one", "err", err)
		return nil
	}
	return err
}

// queuedLookback is how long before the position file's time a peer's
// file may have been written and still hold entries after the position.
const queuedLookback = time.Minute

// queuedSince returns, per peer, the tokens of the entries in the peer's
// backlog files (.B, .D, .P, and journals already renamed .B) written since
// shortly before the fan-out position file was, fsyncing each file read:
// among them, the entries the queues took after the position. A file the lines come
// from is durable before the position moves past them.
func (r *Relay) queuedSince(posFile string) (map[string]map[string]bool, error) {
	st, err := os.Stat(posFile)
	if err != nil {
		return nil, nil // no position: nothing to compare with
	}
	// The position a move writes was taken before the move's queue
	// syncs, so lines after it may be older than the file: look back
	// queuedLookback (a move slower than that only costs duplicates).
	since := st.ModTime().Add(-queuedLookback)
	dir := filepath.Join(r.cfg.Spool, "backlog")
	out := map[string]map[string]bool{}
	for _, p := range r.peers {
		names, _ := filepath.Glob(filepath.Join(dir, p.cfg.Name+".*"))
		for _, name := range names {
			if !isQueueFile(p.cfg.Name, filepath.Base(name)) {
				continue // another peer's ("a.b" beside "a"), or a checkpoint
			}
			fi, err := os.Stat(name)
			if err != nil || !fi.Mode().IsRegular() || fi.ModTime().Before(since) {
				continue
			}
			if err := readQueued(name, out, p.cfg.Name); err != nil {
				return nil, fmt.Errorf("relay: re-routing: %w", err)
			}
		}
	}
	return out, nil
}

// isQueueFile reports whether base names one of peer's files of
// entries: .B, .D, a journal, or <peer>.P.
func isQueueFile(peer, base string) bool {
	if base == queue.ReplayName(peer) {
		return true
	}
	if _, _, ok := queue.ParseFileName(peer, base); ok {
		return true
	}
	_, ok := queue.ParseJournalName(peer, base)
	return ok
}

// readQueued adds the tokens of the backlog lines of file name to
// out[peer] and fsyncs the file.
func readQueued(name string, out map[string]map[string]bool, peer string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if e, perr := queue.ParseLine(line); perr == nil { // with its LF; a torn or bad line is the queue's business
			if out[peer] == nil {
				out[peer] = map[string]bool{}
			}
			out[peer][e.Token] = true
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return err
		}
	}
	return f.Sync()
}
