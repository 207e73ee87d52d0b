package spoolfs

// # Theory of operation: per-peer backlog files
//
// machine/queue decides what happens to a peer's queue; Backlog carries out
// the file operations it asks for (queue.Action), in one directory shared by
// all peers, with these files per peer:
//
//	<peer>.B.<ts>      backlog: articles that could not be sent (write-only)
//	<peer>.D.<ts>      deferred: articles the peer said to retry (write-only)
//	<peer>.J.<ts>      journal: a line for every article offered while the
//	                   peer was up (write-only; deleted once all are settled)
//	<peer>.P           the one file being sent again ("replay")
//	<peer>.P.ckpt      how far <peer>.P has been dealt with: "<offset>\n"
//	<peer>.P.ckpt.tmp  a checkpoint being written (removed at recovery)
//	<peer>.Q.<ts>      a replay file that could not be read (kept for a human)
//	<peer>.bad         corrupt lines met while replaying, copied verbatim
//	<peer>.M           the manifest: every .B, .D and .P file with its entry
//	                   count, so a file deleted under the relay is reported
//	                   (backlog_manifest.go); <peer>.M.tmp while written
//
// <ts> is the Unix time the file was opened, in lowercase hex. A line is
// "<token> <message-id>[ <attempts>]\n" (queue.AppendLine; the third field
// marks an article the peer was offered before); it counts only if it ends
// in LF and parses, so the torn last line of a crashed append is absent, not
// garbage (self-validating records).
//
// Durability, step by step (the package doc's durability rules):
//
//   - Creating a file (Rotate) syncs the directory before any line goes in.
//   - Appends (to .B, .D and .J files) are write(2)s; Sync fsyncs every file
//     written since the last one: one group commit for many articles
//     (§7.6). The owner acknowledges articles upstream only after the Sync
//     that followed their offers returned without error. A failed write is
//     cut back to the last whole line, so the file never holds a torn line
//     in the middle. Closing a file (rotation, promotion) fsyncs it first.
//   - A state change is one rename (§7.3): Promote renames a .B or .D file
//     to <peer>.P (never over an existing one) and syncs the directory.
//   - Checkpoint syncs all pending appends first (entries moved from
//     <peer>.P into another file are durable there before <peer>.P is
//     marked past them), then writes temp, fsyncs, renames, fsyncs the
//     directory (§7.1).
//   - DeleteReplay, QuarantineReplay and DeleteJournal Sync every pending
//     append first: the entries of the file going away that moved to a .B
//     or .D file must be durable there before it goes. DeleteReplay removes
//     the checkpoint before <peer>.P: a checkpoint alone is then a <peer>.P
//     deleted under us, reported as lost.
//   - WriteManifest (the queue asks for it when its list of files changes
//     shape, never per article) writes <peer>.M through a temp file as
//     Checkpoint does; the queue lists a file only after it is on disk and
//     unlists it before it goes, so our own crash never makes it accuse.
//   - Recover reports every file the manifest lists that is gone (logged at
//     error, counted by the queue as Lost), sweeps temps and stale
//     checkpoints, renames every journal
//     <peer>.J.<ts> (left only by a crash) to <peer>.B.<ts> so its entries
//     are sent again, and lists what is left for queue.New (§7.4); corrupt
//     lines are quarantined when met, never dropped silently (§7.5).
//
// A directory must be used by one process at a time.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/newsflow/newsflow/machine/queue"
)

// Backlog carries out machine/queue's actions for one peer's files in one
// directory. It is not safe for concurrent use.
type Backlog struct {
	dir  string
	peer string
	log  *slog.Logger

	open  map[string]*backlogFile // .B/.D files taking appends
	rp    *os.File                // <peer>.P, open for reading
	rpr   *bufio.Reader           // ReadReplay's reader, reused from one refill to the next
	rrun  []byte                  // ReadReplay's lines of one refill, reused
	rends []int                   // where each line of rrun ends, reused
	bad   *os.File                // <peer>.bad, opened on the first corrupt line
	buf   []byte
	lost  []LostFile      // files the queue's state named that Recover found gone
	known map[string]bool // .B/.D/.P names on disk by Recover's finding or our doing (the manifest lists no other)

	staleManifest bool     // the last manifest write failed: remove <peer>.M before removing a file
	crash         string   // tests: stop after this named step, as if the process died
	trace         bool     // tests: record the durable steps in ops
	ops           []string // "fsync peer.B.1", "remove peer.J.2", ... while trace is on
}

// backlogFile is an open .B, .D or .J file.
type backlogFile struct {
	f      *os.File
	size   int64 // octets of whole lines written
	synced int64 // octets known durable (size at the last fsync)
	dirty  bool  // written since the last fsync
}

// ReplayBatch is what ReadReplay read from <peer>.P: the entries, the
// offset after the last line consumed, whether the end was reached, and how
// many corrupt lines were skipped (and copied to <peer>.bad).
type ReplayBatch struct {
	Entries []queue.Entry
	Offset  int64
	EOF     bool
	Bad     int
}

// errBacklogCrash is returned by an operation stopped at a test crash point.
var errBacklogCrash = errors.New("simulated crash")

// OpenBacklog returns the backlog of peer in dir, creating dir if needed. A
// nil log discards. Call Recover before anything else.
func OpenBacklog(dir, peer string, log *slog.Logger) (*Backlog, error) {
	if peer == "" || peer == "." || peer == ".." || strings.ContainsAny(peer, "/\x00") {
		return nil, fmt.Errorf("backlog: peer name %q cannot name files", peer)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("backlog %s: %w", peer, err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Backlog{dir: dir, peer: peer, log: log, open: map[string]*backlogFile{}, known: map[string]bool{}}, nil
}

// Do carries out one action. Only ReadReplay returns a batch, for
// queue.ReplayRead; on an error the owner calls queue.Failed.
func (b *Backlog) Do(a queue.Action) (ReplayBatch, error) {
	switch a := a.(type) {
	case queue.RotateBacklog:
		return ReplayBatch{}, b.Rotate(a.Closed, a.Opened)
	case queue.AppendBacklog:
		return ReplayBatch{}, b.Append(a.File, a.Entries)
	case queue.PromoteToReplay:
		return ReplayBatch{}, b.Promote(a.File)
	case queue.ReadReplay:
		return b.ReadReplay(a.Offset, a.Max)
	case queue.Checkpoint:
		return ReplayBatch{}, b.Checkpoint(a.Offset, a.Left)
	case queue.WriteManifest:
		return ReplayBatch{}, b.WriteManifest(a.Files)
	case queue.DeleteReplay:
		return ReplayBatch{}, b.DeleteReplay()
	case queue.QuarantineReplay:
		return ReplayBatch{}, b.QuarantineReplay(a.To)
	case queue.DeleteBacklog:
		return ReplayBatch{}, b.Delete(a.File)
	case queue.OpenJournal:
		return ReplayBatch{}, b.OpenJournal(a.File)
	case queue.AppendJournal:
		return ReplayBatch{}, b.AppendJournal(a.File, a.Entries)
	case queue.CloseJournal:
		return ReplayBatch{}, b.CloseJournal(a.File)
	case queue.DeleteJournal:
		return ReplayBatch{}, b.DeleteJournal(a.File)
	}
	return ReplayBatch{}, fmt.Errorf("backlog %s: unknown action %T", b.peer, a)
}

// path checks that name is one of this peer's .B/.D files and returns its
// path: actions never reach outside the peer's files.
func (b *Backlog) path(name string) (string, error) {
	if _, _, ok := queue.ParseFileName(b.peer, name); !ok {
		return "", fmt.Errorf("backlog %s: %q is not one of its .B/.D files", b.peer, name)
	}
	return filepath.Join(b.dir, name), nil
}

// journalPath checks that name is one of this peer's journal files and
// returns its path.
func (b *Backlog) journalPath(name string) (string, error) {
	if _, ok := queue.ParseJournalName(b.peer, name); !ok {
		return "", fmt.Errorf("backlog %s: %q is not one of its journal files", b.peer, name)
	}
	return filepath.Join(b.dir, name), nil
}

// note records a durable step while tracing (tests).
func (b *Backlog) note(op, name string) {
	if b.trace {
		b.ops = append(b.ops, op+" "+name)
	}
}

// syncDir fsyncs the directory: names created, renamed or removed are
// durable after it.
func (b *Backlog) syncDir() error {
	b.note("fsync-dir", ".")
	return SyncDir(b.dir)
}

// syncFile fdatasyncs an open file.
func (b *Backlog) syncFile(name string, bf *backlogFile) error {
	b.note("fsync", name)
	if err := syncData(bf.f); err != nil {
		return err
	}
	bf.synced, bf.dirty = bf.size, false
	return nil
}

func (b *Backlog) replayPath() string { return filepath.Join(b.dir, queue.ReplayName(b.peer)) }
func (b *Backlog) ckptPath() string   { return filepath.Join(b.dir, queue.CheckpointName(b.peer)) }

// hit reports whether the test crash point step is reached.
func (b *Backlog) hit(step string) bool { return b.crash == step }

// Rotate syncs and closes closed ("" for none) and creates opened, empty,
// syncing the directory so the name is durable before any line goes in.
func (b *Backlog) Rotate(closed, opened string) error {
	if closed != "" {
		if err := b.closeFile(closed, true); err != nil {
			return err
		}
	}
	p, err := b.path(opened)
	if err != nil {
		return err
	}
	if err := b.create(opened, p, "rotate:after-create"); err != nil {
		return err
	}
	b.known[opened] = true
	return nil
}

// create makes the empty file name at path p, open for appends, and syncs
// the directory so the name is durable before any line goes in. crashAt
// names the test crash point between the two.
func (b *Backlog) create(name, p, crashAt string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("backlog %s: create: %w", b.peer, err)
	}
	b.note("create", name)
	b.open[name] = &backlogFile{f: f}
	if b.hit(crashAt) {
		return errBacklogCrash
	}
	if err := b.syncDir(); err != nil {
		return fmt.Errorf("backlog %s: create %s: %w", b.peer, name, err)
	}
	return nil
}

// OpenJournal creates the empty journal file file and syncs the directory.
func (b *Backlog) OpenJournal(file string) error {
	p, err := b.journalPath(file)
	if err != nil {
		return err
	}
	return b.create(file, p, "open-journal:after-create")
}

// AppendJournal writes the lines of entries to journal file file, which
// OpenJournal created, in one write. Like Append it does not sync: the
// owner's Sync does, before it acknowledges the offers upstream.
func (b *Backlog) AppendJournal(file string, entries []queue.Entry) error {
	if _, err := b.journalPath(file); err != nil {
		return err
	}
	return b.Append(file, entries)
}

// CloseJournal fsyncs journal file file (if written since the last Sync)
// and closes it. A file that is not open is not an error.
func (b *Backlog) CloseJournal(file string) error {
	if _, err := b.journalPath(file); err != nil {
		return err
	}
	return b.closeFile(file, true)
}

// DeleteJournal removes journal file file, all of whose entries are
// settled: FIRST Sync every pending append (entries that moved from the
// journal to a .B or .D file must be durable there before it goes), then
// close and remove it, then sync the directory. A file already gone is not
// an error.
func (b *Backlog) DeleteJournal(file string) error {
	p, err := b.journalPath(file)
	if err != nil {
		return err
	}
	if err := b.Sync(); err != nil {
		return fmt.Errorf("backlog %s: delete journal %s: %w", b.peer, file, err)
	}
	if b.hit("delete-journal:after-sync") {
		return errBacklogCrash
	}
	if err := b.closeFile(file, false); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backlog %s: delete journal: %w", b.peer, err)
	}
	b.note("remove", file)
	if b.hit("delete-journal:after-remove") {
		return errBacklogCrash
	}
	if err := b.syncDir(); err != nil {
		return fmt.Errorf("backlog %s: delete journal %s: %w", b.peer, file, err)
	}
	return nil
}

// Append writes the lines of entries to file, which Rotate created, in one
// write. It does not sync (Sync does, for many appends at once). A failed
// write is cut back to the last whole line.
func (b *Backlog) Append(file string, entries []queue.Entry) error {
	bf, ok := b.open[file]
	if !ok {
		return fmt.Errorf("backlog %s: append to %s: not open for appends", b.peer, file)
	}
	b.buf = b.buf[:0]
	for _, e := range entries {
		if err := queue.CheckEntry(e); err != nil {
			return fmt.Errorf("backlog %s: append to %s: %w", b.peer, file, err)
		}
		b.buf = queue.AppendLine(b.buf, e)
	}
	n, err := bf.f.WriteAt(b.buf, bf.size)
	if err == nil && b.hit("append:torn") {
		// Leave a torn last line, as a crash in the middle of the write.
		n, err = len(b.buf)-3, errBacklogCrash
		if terr := bf.f.Truncate(bf.size + int64(n)); terr != nil {
			return terr
		}
		return err
	}
	if err != nil {
		if n > 0 {
			if terr := bf.f.Truncate(bf.size); terr != nil {
				b.log.Error("backlog: cannot cut a failed append back; closing the file", "peer", b.peer, "file", file, "err", terr)
				bf.f.Close()
				delete(b.open, file)
			}
		}
		return fmt.Errorf("backlog %s: append to %s: %w", b.peer, file, err)
	}
	bf.size += int64(n)
	bf.dirty = true
	return nil
}

// Sync makes every line appended so far durable: one fsync per file written
// since the last Sync.
func (b *Backlog) Sync() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(b.open)) {
		bf := b.open[name]
		if !bf.dirty {
			continue
		}
		if err := b.syncFile(name, bf); err != nil {
			errs = append(errs, fmt.Errorf("backlog %s: sync %s: %w", b.peer, name, err))
			continue
		}
	}
	if b.bad != nil {
		if err := syncData(b.bad); err != nil {
			errs = append(errs, fmt.Errorf("backlog %s: sync quarantine: %w", b.peer, err))
		}
	}
	return errors.Join(errs...)
}

// closeFile closes an open .B/.D file, fsyncing it first if sync.
func (b *Backlog) closeFile(name string, sync bool) error {
	bf, ok := b.open[name]
	if !ok {
		return nil
	}
	delete(b.open, name)
	var err error
	if sync && bf.dirty {
		err = b.syncFile(name, bf)
	}
	if cerr := bf.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backlog %s: close %s: %w", b.peer, name, err)
	}
	return nil
}

// Promote renames file to <peer>.P: sync and close it if open, remove a
// stale checkpoint (syncing the directory), rename, sync the directory. An
// existing <peer>.P is never overwritten.
func (b *Backlog) Promote(file string) error {
	p, err := b.path(file)
	if err != nil {
		return err
	}
	if err := b.closeFile(file, true); err != nil {
		return err
	}
	if _, err := os.Lstat(b.replayPath()); err == nil {
		return fmt.Errorf("backlog %s: promote %s: %s exists", b.peer, file, queue.ReplayName(b.peer))
	}
	switch err := os.Remove(b.ckptPath()); {
	case err == nil:
		if err := b.syncDir(); err != nil {
			return fmt.Errorf("backlog %s: promote %s: %w", b.peer, file, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("backlog %s: promote %s: stale checkpoint: %w", b.peer, file, err)
	}
	if b.hit("promote:after-ckpt-remove") {
		return errBacklogCrash
	}
	if err := os.Rename(p, b.replayPath()); err != nil {
		return fmt.Errorf("backlog %s: promote: %w", b.peer, err)
	}
	b.note("rename", file+" "+queue.ReplayName(b.peer))
	delete(b.known, file)
	b.known[queue.ReplayName(b.peer)] = true
	if b.hit("promote:after-rename") {
		return errBacklogCrash
	}
	if err := b.syncDir(); err != nil {
		return fmt.Errorf("backlog %s: promote %s: %w", b.peer, file, err)
	}
	return nil
}

// replayPrealloc bounds the entries ReadReplay makes room for up front (a
// refill is half a queue, 2048 entries by default).
const replayPrealloc = 8192

// ReadReplay reads up to max entries from <peer>.P starting at offset.
// Complete lines that do not parse are copied to <peer>.bad and skipped; a
// last line without LF (torn by a crash) is not consumed and ends the file.
func (b *Backlog) ReadReplay(offset int64, max int) (ReplayBatch, error) {
	if b.rp == nil {
		f, err := os.Open(b.replayPath())
		if err != nil {
			return ReplayBatch{}, fmt.Errorf("backlog %s: read replay: %w", b.peer, err)
		}
		b.rp = f
	}
	st, err := b.rp.Stat()
	if err != nil {
		return ReplayBatch{}, fmt.Errorf("backlog %s: read replay: %w", b.peer, err)
	}
	if offset < 0 || offset > st.Size() {
		return ReplayBatch{}, fmt.Errorf("backlog %s: read replay at %d of %d octets", b.peer, offset, st.Size())
	}
	// The entries' array is sized for the refill at once, and the reader
	// and its 64 KiB buffer are reused: draining 2 KB articles to four
	// peers, growing the array and a new reader per refill were two
	// thirds of newsfeed's allocated bytes.
	batch := ReplayBatch{Offset: offset, Entries: make([]queue.Entry, 0, min(max, replayPrealloc))}
	if b.rpr == nil {
		b.rpr = bufio.NewReaderSize(nil, 64<<10)
	}
	r := b.rpr
	r.Reset(io.NewSectionReader(b.rp, offset, st.Size()-offset))
	defer r.Reset(nil) // keeps no reference to the file between refills

	// The batch's complete lines are gathered into one buffer and parsed
	// from one string made of it, so that the entries' tokens and ids
	// are parts of it: one allocation a refill, not one a line (draining
	// 2 KB articles to four peers, a string per line was 60% of the
	// objects newsfeed allocated). At most max lines are read, so a bad
	// line makes the batch one entry shorter; the caller reads on from
	// Offset until EOF.
	run := b.rrun[:0]
	ends := b.rends[:0] // where each line of run ends
	for len(ends) < max {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			run = append(run, line...) // a line longer than the buffer, being gathered
			continue
		}
		if err == io.EOF {
			batch.EOF = true // what is left, if anything, is a torn line
			break
		}
		if err != nil {
			return ReplayBatch{}, fmt.Errorf("backlog %s: read replay: %w", b.peer, err)
		}
		run = append(run, line...)
		ends = append(ends, len(run))
	}
	if len(ends) > 0 {
		lines := string(run[:ends[len(ends)-1]])
		start := 0
		for _, end := range ends {
			line := lines[start:end]
			e, perr := queue.ParseLineString(line)
			if perr != nil {
				if err := b.quarantineLine(run[start:end], batch.Offset, perr); err != nil {
					return ReplayBatch{}, err
				}
				batch.Bad++
			} else {
				batch.Entries = append(batch.Entries, e)
			}
			batch.Offset += int64(end - start)
			start = end
		}
	}
	b.rrun, b.rends = run[:0], ends[:0]
	if batch.Offset == st.Size() {
		batch.EOF = true
	}
	return batch, nil
}

// quarantineLine appends a corrupt line to <peer>.bad: a corrupt line is
// kept for a person, never dropped silently.
func (b *Backlog) quarantineLine(line []byte, off int64, why error) error {
	if b.bad == nil {
		f, err := os.OpenFile(filepath.Join(b.dir, b.peer+".bad"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("backlog %s: quarantine: %w", b.peer, err)
		}
		b.bad = f
	}
	b.log.Warn("backlog: corrupt line quarantined", "peer", b.peer, "file", queue.ReplayName(b.peer), "offset", off, "err", why)
	if _, err := b.bad.Write(line); err != nil {
		return fmt.Errorf("backlog %s: quarantine: %w", b.peer, err)
	}
	return nil
}

// Checkpoint records that <peer>.P is dealt with up to offset, with left
// of its entries not yet settled (queue.Checkpoint; negative: not said):
// Sync every append first, then write <peer>.P.ckpt ("<offset> <left>\n")
// through a temp file, fsync it, rename it, fsync the directory.
func (b *Backlog) Checkpoint(offset, left int64) error {
	if err := b.Sync(); err != nil {
		return fmt.Errorf("backlog %s: checkpoint: %w", b.peer, err)
	}
	data := strconv.AppendInt(nil, offset, 10)
	if left >= 0 {
		data = strconv.AppendInt(append(data, ' '), left, 10)
	}
	if err := b.replaceFile(queue.CheckpointName(b.peer), append(data, '\n'), "checkpoint:after-temp"); err != nil {
		if errors.Is(err, errBacklogCrash) {
			return err
		}
		return fmt.Errorf("backlog %s: checkpoint: %w", b.peer, err)
	}
	return nil
}

// backlogCheckpoint is what <peer>.P.ckpt says.
type backlogCheckpoint struct {
	offset int64
	left   int64 // entries not yet settled; -1 when it does not say (an older checkpoint)
}

// backlogParseCheckpoint reads "<offset> <left>\n", or "<offset>\n" as
// written before checkpoints carried the entries left: decimals without
// sign or leading zero, nothing else.
func backlogParseCheckpoint(data []byte) (backlogCheckpoint, bool) {
	ck := backlogCheckpoint{left: -1}
	s, ok := bytes.CutSuffix(data, []byte{'\n'})
	if !ok {
		return ck, false
	}
	off, left, two := bytes.Cut(s, []byte{' '})
	if ck.offset, ok = backlogParseDecimal(off); !ok {
		return backlogCheckpoint{left: -1}, false
	}
	if two {
		if ck.left, ok = backlogParseDecimal(left); !ok {
			return backlogCheckpoint{left: -1}, false
		}
	}
	return ck, true
}

// backlogParseDecimal reads a decimal without sign or leading zero.
func backlogParseDecimal(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 19 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' { // no sign: "-0" is not a checkpoint
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// DeleteReplay Syncs every pending append (entries of <peer>.P that moved
// to a .B or .D file must be durable there first), removes the checkpoint,
// syncs the directory, then removes <peer>.P and syncs again. In that order
// a checkpoint never outlives its <peer>.P by our doing, so Recover can tell
// a <peer>.P that vanished under us (lost entries, reported) from an
// interrupted delete (a <peer>.P without checkpoint, replayed from the
// start: duplicates, not losses). Names already gone are not an error.
func (b *Backlog) DeleteReplay() error {
	if err := b.Sync(); err != nil {
		return fmt.Errorf("backlog %s: delete replay: %w", b.peer, err)
	}
	b.closeReplay()
	if err := b.dropStaleManifest(); err != nil {
		return err
	}
	if err := os.Remove(b.ckptPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backlog %s: delete replay checkpoint: %w", b.peer, err)
	}
	b.note("remove", queue.CheckpointName(b.peer))
	if err := b.syncDir(); err != nil {
		return fmt.Errorf("backlog %s: delete replay: %w", b.peer, err)
	}
	if b.hit("delete-replay:after-remove") {
		return errBacklogCrash
	}
	if err := os.Remove(b.replayPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backlog %s: delete replay: %w", b.peer, err)
	}
	b.note("remove", queue.ReplayName(b.peer))
	delete(b.known, queue.ReplayName(b.peer))
	if err := b.syncDir(); err != nil {
		return fmt.Errorf("backlog %s: delete replay: %w", b.peer, err)
	}
	return nil
}

// QuarantineReplay Syncs every pending append (as DeleteReplay does),
// renames <peer>.P to to (a <peer>.Q.<ts> name), removes its checkpoint and
// syncs the directory. A <peer>.P already gone is not an error: there is
// nothing left to keep.
func (b *Backlog) QuarantineReplay(to string) error {
	hex, ok := strings.CutPrefix(to, b.peer+".Q.")
	if !ok || queue.QuarantineName(b.peer, backlogParseHex(hex)) != to {
		return fmt.Errorf("backlog %s: %q is not a quarantine name", b.peer, to)
	}
	if err := b.Sync(); err != nil {
		return fmt.Errorf("backlog %s: quarantine replay: %w", b.peer, err)
	}
	b.closeReplay()
	if err := b.dropStaleManifest(); err != nil {
		return err
	}
	if err := os.Rename(b.replayPath(), filepath.Join(b.dir, to)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backlog %s: quarantine replay: %w", b.peer, err)
	}
	delete(b.known, queue.ReplayName(b.peer))
	if err := os.Remove(b.ckptPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backlog %s: quarantine replay checkpoint: %w", b.peer, err)
	}
	if err := b.syncDir(); err != nil {
		return fmt.Errorf("backlog %s: quarantine replay: %w", b.peer, err)
	}
	return nil
}

func backlogParseHex(s string) int64 {
	v, err := strconv.ParseInt(s, 16, 64)
	if err != nil {
		return -1
	}
	return v
}

// Delete removes a .B/.D file a limit dropped (closing it first if open)
// and syncs the directory.
func (b *Backlog) Delete(file string) error {
	p, err := b.path(file)
	if err != nil {
		return err
	}
	if err := b.closeFile(file, false); err != nil {
		return err
	}
	if err := b.dropStaleManifest(); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backlog %s: delete: %w", b.peer, err)
	}
	b.note("remove", file)
	delete(b.known, file)
	if err := b.syncDir(); err != nil {
		return fmt.Errorf("backlog %s: delete %s: %w", b.peer, file, err)
	}
	return nil
}

func (b *Backlog) closeReplay() {
	if b.rp != nil {
		b.rp.Close()
		b.rp = nil
	}
}

// Close syncs and closes every open file. Call it after queue.Shutdown's
// actions have been carried out.
func (b *Backlog) Close() error {
	err := b.Sync()
	for _, name := range slices.Sorted(maps.Keys(b.open)) {
		if cerr := b.closeFile(name, false); err == nil {
			err = cerr
		}
	}
	b.closeReplay()
	if b.bad != nil {
		if cerr := b.bad.Close(); err == nil {
			err = cerr
		}
		b.bad = nil
	}
	return err
}
