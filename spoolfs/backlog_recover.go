package spoolfs

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/newsflow/newsflow/machine/queue"
)

// Recover readies the peer's files after a start or a crash and lists them
// for queue.New (recovery at open): it reports every file the manifest
// <peer>.M lists that is gone (Recovered.Lost, logged at error; the manifest
// is rewritten without them) and a checkpoint whose <peer>.P is gone (deleted
// under us: DeleteReplay removes the checkpoint first); removes temps
// (<peer>.P.ckpt.tmp, <peer>.M.tmp) and that checkpoint; renames every
// journal <peer>.J.<ts> to <peer>.B.<ts> (a clean Shutdown leaves none, so
// each is a crash's: its entries were in memory, in flight or answered, and
// are all sent again, marked FileInfo.Journal so the queue counts them as
// Resent); syncs the directory if it did any of this; counts the valid lines
// of each .B and .D file; and finds where <peer>.P resumes. A checkpoint that
// does not parse, lies beyond the file or not at a line start is ignored
// (logged): the file resumes from the start, which sends duplicates rather
// than losing entries.
func (b *Backlog) Recover() (queue.Recovered, error) {
	var r queue.Recovered
	des, err := os.ReadDir(b.dir)
	if err != nil {
		return r, fmt.Errorf("backlog %s: recover: %w", b.peer, err)
	}
	has := map[string]bool{}
	var files, journals []string
	maxTS := int64(0)
	for _, de := range des {
		name := de.Name()
		has[name] = true
		if _, ts, ok := queue.ParseFileName(b.peer, name); ok && de.Type().IsRegular() {
			files = append(files, name)
			maxTS = max(maxTS, ts)
		}
		if ts, ok := queue.ParseJournalName(b.peer, name); ok && de.Type().IsRegular() {
			journals = append(journals, name)
			maxTS = max(maxTS, ts)
		}
	}
	// Files the manifest lists that are gone were lost under us: reported
	// (at error, once: the queue's first manifest forgets them) and
	// counted. Then the temps of an interrupted Checkpoint or manifest go
	// (the old file, or none, still holds), and a checkpoint without
	// <peer>.P, so that it cannot apply to the next one; the directory is
	// synced so they stay gone.
	pName, ckName, mName := queue.ReplayName(b.peer), queue.CheckpointName(b.peer), ManifestName(b.peer)
	if err := b.findLost(b.readManifest(), has); err != nil {
		return r, fmt.Errorf("backlog %s: recover: %w", b.peer, err)
	}
	swept := false
	for _, name := range []string{ckName + ".tmp", ckName, mName + ".tmp"} {
		if !has[name] || (name == ckName && has[pName]) {
			continue
		}
		if err := os.Remove(filepath.Join(b.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return r, fmt.Errorf("backlog %s: recover: %w", b.peer, err)
		}
		b.log.Info("backlog: removed a leftover file", "peer", b.peer, "file", name)
		swept = true
	}
	// A journal becomes the .B file of the same timestamp: one rename, so
	// a crash here leaves each journal under one name or the other, and the
	// next Recover finishes the job. (The machine gives .B, .D and .J files
	// timestamps from one sequence, so the name is free; if it is not, the
	// journal takes the next free timestamp rather than overwrite a file.)
	fromJournal := map[string]bool{}
	for _, name := range journals {
		ts, _ := queue.ParseJournalName(b.peer, name)
		to := queue.FileName(b.peer, queue.KindBacklog, ts)
		if has[to] {
			maxTS++
			to = queue.FileName(b.peer, queue.KindBacklog, maxTS)
			b.log.Warn("backlog: a journal's .B name is taken; using a new timestamp", "peer", b.peer, "journal", name, "to", to)
		}
		if err := os.Rename(filepath.Join(b.dir, name), filepath.Join(b.dir, to)); err != nil {
			return r, fmt.Errorf("backlog %s: recover journal: %w", b.peer, err)
		}
		b.note("rename", name+" "+to)
		b.log.Info("backlog: journal left by a crash will be sent again", "peer", b.peer, "journal", name, "as", to)
		has[to], fromJournal[to] = true, true
		files = append(files, to)
		swept = true
	}
	if swept {
		if err := b.syncDir(); err != nil {
			return r, fmt.Errorf("backlog %s: recover: %w", b.peer, err)
		}
	}
	// Each .B/.D file is read through once to count its valid lines: the
	// machine's counters (and the byte and age limits) start exact.
	for _, name := range files {
		k, ts, _ := queue.ParseFileName(b.peer, name)
		p := filepath.Join(b.dir, name)
		st, err := os.Stat(p)
		if err != nil {
			return r, fmt.Errorf("backlog %s: recover: %w", b.peer, err)
		}
		sc, err := backlogScan(p, 0)
		if err != nil {
			return r, fmt.Errorf("backlog %s: recover: %w", b.peer, err)
		}
		r.Files = append(r.Files, queue.FileInfo{Name: name, Kind: k, TS: ts, Bytes: sc.end,
			Entries: sc.entries, MaxAttempts: sc.maxAttempts, ModTime: st.ModTime(), Journal: fromJournal[name]})
	}
	slices.SortFunc(r.Files, func(x, y queue.FileInfo) int {
		if x.TS != y.TS {
			return cmp.Compare(x.TS, y.TS)
		}
		return int(x.Kind) - int(y.Kind)
	})
	if has[pName] {
		p := b.replayPath()
		st, err := os.Stat(p)
		if err != nil {
			return r, fmt.Errorf("backlog %s: recover: %w", b.peer, err)
		}
		off := int64(0)
		if has[ckName] {
			off, err = b.readCheckpoint(p, st.Size())
			if err != nil {
				return r, err
			}
		}
		sc, err := backlogScan(p, off)
		if err != nil {
			return r, fmt.Errorf("backlog %s: recover: %w", b.peer, err)
		}
		r.Replay = &queue.ReplayInfo{Bytes: st.Size(), Offset: off, Entries: sc.entries}
		b.known[pName] = true
	}
	for _, fi := range r.Files {
		b.known[fi.Name] = true
	}
	r.Lost = b.lost
	return r, nil
}

// mustRead returns the file's content, or nil when it cannot be read (the
// caller then treats it as unusable).
func mustRead(p string) []byte {
	data, _ := os.ReadFile(p)
	return data
}

// readCheckpoint returns the offset in <peer>.P.ckpt if it is usable for a
// replay file of size octets, else 0.
func (b *Backlog) readCheckpoint(replay string, size int64) (int64, error) {
	data, err := os.ReadFile(b.ckptPath())
	if err != nil {
		return 0, fmt.Errorf("backlog %s: recover checkpoint: %w", b.peer, err)
	}
	ck, ok := backlogParseCheckpoint(data)
	off := ck.offset
	if ok && off > size {
		ok = false
	}
	if ok && off > 0 {
		// The checkpoint must fall just after a line's LF.
		f, err := os.Open(replay)
		if err != nil {
			return 0, fmt.Errorf("backlog %s: recover checkpoint: %w", b.peer, err)
		}
		var c [1]byte
		_, err = f.ReadAt(c[:], off-1)
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("backlog %s: recover checkpoint: %w", b.peer, err)
		}
		ok = c[0] == '\n'
	}
	if !ok {
		b.log.Warn("backlog: unusable checkpoint; replaying from the start", "peer", b.peer, "checkpoint", string(data), "size", size)
		return 0, nil
	}
	return off, nil
}

// backlogScanResult is what a pass over a backlog file found.
type backlogScanResult struct {
	entries     int
	maxAttempts int
	end         int64 // offset after the last complete line (a torn tail is not counted)
}

// backlogScan counts the valid lines of the file at path from offset on.
func backlogScan(path string, from int64) (backlogScanResult, error) {
	res := backlogScanResult{end: from}
	f, err := os.Open(path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return res, err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var long []byte
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if err == io.EOF {
			return res, nil
		}
		if err != nil {
			return res, err
		}
		// Complete lines count toward the size, valid or not; a torn tail
		// (no LF before EOF) does not.
		res.end += int64(len(long) + len(line))
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		if a, err := queue.CheckLine(line); err == nil {
			res.entries++
			res.maxAttempts = max(res.maxAttempts, a)
		}
	}
}
