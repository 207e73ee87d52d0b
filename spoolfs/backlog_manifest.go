package spoolfs

// # The manifest <peer>.M
//
// machine/queue lists the peer's .B, .D and .P files with their entry
// counts (queue.WriteManifest) whenever that list changes shape; Backlog
// writes the list as <peer>.M so that Recover can tell a file deleted under
// the relay (reported, counted as lost) from one it never listed (adopted,
// as files of an older version are). One line per file, then an end marker
// (a manifest without it is torn and ignored):
//
//	<name> <entries> <octets> open|sealed
//	end
//
// "open" marks the file still taking lines: its counts are a lower bound.
// A manifest that would list nothing is removed instead.
//
// Durability (durable replace): write <peer>.M.tmp, fsync it, rename it over
// <peer>.M, fsync the directory. Recover removes a leftover temp. Backlog
// lists only names it knows to be on disk by its own doing (found by
// Recover, created by Rotate, renamed by Promote, not removed since), so
// an action that failed never leaves the manifest naming a file that is not
// there. When a manifest cannot be replaced the old one stays until the next
// removal of a file, which removes it first (and syncs the directory):
// without one nothing is reported, which is better than reporting a file
// the queue deleted itself.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/newsflow/newsflow/machine/queue"
)

// LostFile is a backlog file the queue's durable state (its manifest, or
// the checkpoint of <peer>.P) named that was gone at Recover: the
// acknowledged articles in it will never be sent.
type LostFile = queue.LostFile

// Lost returns the files Recover found gone.
func (b *Backlog) Lost() []LostFile { return b.lost }

// ManifestName is the manifest of peer's backlog files.
func ManifestName(peer string) string { return peer + ".M" }

func (b *Backlog) manifestPath() string { return filepath.Join(b.dir, ManifestName(b.peer)) }

// WriteManifest replaces <peer>.M with files (those Backlog knows to be on
// disk): temp, fsync, rename, fsync the directory.
func (b *Backlog) WriteManifest(files []queue.ManifestFile) error {
	listed := make([]queue.ManifestFile, 0, len(files))
	for _, f := range files {
		if b.known[f.Name] {
			listed = append(listed, f)
		}
	}
	return b.writeManifest(listed)
}

// writeManifest replaces <peer>.M with files, or removes it when there are
// none.
func (b *Backlog) writeManifest(files []queue.ManifestFile) error {
	if len(files) == 0 {
		// Nothing to list: no manifest, so a drained queue leaves no file.
		switch err := os.Remove(b.manifestPath()); {
		case err == nil:
			b.note("remove", ManifestName(b.peer))
			if err := b.syncDir(); err != nil {
				b.staleManifest = true
				return fmt.Errorf("backlog %s: manifest: %w", b.peer, err)
			}
		case !errors.Is(err, fs.ErrNotExist):
			b.staleManifest = true
			return fmt.Errorf("backlog %s: manifest: %w", b.peer, err)
		}
		b.staleManifest = false
		return nil
	}
	var buf []byte
	for _, f := range files {
		buf = append(buf, f.Name...)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, f.Entries, 10)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, f.Bytes, 10)
		if f.Open {
			buf = append(buf, " open\n"...)
		} else {
			buf = append(buf, " sealed\n"...)
		}
	}
	buf = append(buf, "end\n"...)
	err := b.replaceFile(ManifestName(b.peer), buf, "manifest:after-temp")
	if errors.Is(err, errBacklogCrash) {
		return err
	}
	if err != nil {
		// The old manifest stays (removing it would free space on a full
		// disk under the spool's feet), but it may list a file the queue
		// is about to delete: the next removal drops it first.
		b.staleManifest = true
		return fmt.Errorf("backlog %s: manifest: %w", b.peer, err)
	}
	b.staleManifest = false
	return nil
}

// dropStaleManifest removes a manifest that could not be replaced before a
// file it may list is removed, so that it cannot accuse the queue of a
// loss it made itself. Without a manifest nothing is reported.
func (b *Backlog) dropStaleManifest() error {
	if !b.staleManifest {
		return nil
	}
	if err := os.Remove(b.manifestPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backlog %s: stale manifest: %w", b.peer, err)
	}
	b.note("remove", ManifestName(b.peer))
	if err := b.syncDir(); err != nil {
		return fmt.Errorf("backlog %s: stale manifest: %w", b.peer, err)
	}
	b.staleManifest = false
	return nil
}

// replaceFile writes data to name durably: name.tmp, fsync, rename over
// name, fsync the directory. crashAt names the test crash point after the
// temp is durable.
func (b *Backlog) replaceFile(name string, data []byte, crashAt string) error {
	p := filepath.Join(b.dir, name)
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		b.note("fsync", name+".tmp")
		err = syncData(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if b.hit(crashAt) {
		return errBacklogCrash
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	b.note("rename", name+".tmp "+name)
	return b.syncDir()
}

// manifestEntry is one line of <peer>.M.
type manifestEntry struct {
	entries, bytes int64
	open           bool
}

// readManifest returns what <peer>.M lists, nil when there is none. One
// that does not parse is ignored (logged): nothing is reported from it.
func (b *Backlog) readManifest() map[string]manifestEntry {
	data, err := os.ReadFile(b.manifestPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	m, ok := map[string]manifestEntry{}, err == nil
	lines := bytes.SplitAfter(data, []byte{'\n'})
	if ok && (len(lines) < 2 || string(lines[len(lines)-2]) != "end\n" || len(lines[len(lines)-1]) != 0) {
		ok = false // no end marker: torn
	}
	for i := 0; ok && i < len(lines)-2; i++ {
		f := bytes.Fields(lines[i])
		var e manifestEntry
		var err1, err2 error
		if len(f) != 4 || (string(f[3]) != "open" && string(f[3]) != "sealed") {
			ok = false
			break
		}
		e.entries, err1 = strconv.ParseInt(string(f[1]), 10, 64)
		e.bytes, err2 = strconv.ParseInt(string(f[2]), 10, 64)
		e.open = string(f[3]) == "open"
		name := string(f[0])
		_, _, isFile := queue.ParseFileName(b.peer, name)
		if err1 != nil || err2 != nil || e.entries < 0 || e.bytes < 0 || (!isFile && name != queue.ReplayName(b.peer)) {
			ok = false
			break
		}
		m[name] = e
	}
	if !ok {
		b.log.Warn("backlog: unusable manifest ignored; files gone since it was written cannot be reported", "peer", b.peer, "err", err)
		return nil
	}
	return m
}

// findLost compares the manifest with the directory (has: the names present
// at start) and records every listed file that is gone, logging each at
// error once: it then rewrites the manifest without them, before Recover
// removes the checkpoint of a lost <peer>.P (a crash between reports that
// file again, from the checkpoint alone). A lost <peer>.P takes the octets
// sent and, when it says, the entries left from its checkpoint. A
// checkpoint whose <peer>.P is gone and unlisted (a manifest-less directory
// of an older version) is reported too: DeleteReplay removes the
// checkpoint first, so it was deleted under us.
func (b *Backlog) findLost(m map[string]manifestEntry, has map[string]bool) error {
	pName, ckName := queue.ReplayName(b.peer), queue.CheckpointName(b.peer)
	_, pListed := m[pName]
	var kept []queue.ManifestFile
	for _, name := range slices.Sorted(maps.Keys(m)) {
		e := m[name]
		switch {
		case has[name]:
			kept = append(kept, queue.ManifestFile{Name: name, Entries: e.entries, Bytes: e.bytes, Open: e.open})
			continue
		case name != pName && has[pName] && !pListed:
			// Promote renamed it to <peer>.P and the process died before
			// the next manifest: nothing is lost.
			continue
		}
		l := LostFile{Name: name, Entries: e.entries, Bytes: e.bytes, Open: e.open}
		if name == pName {
			b.fromCheckpoint(&l, has)
		}
		b.reportLost(l)
	}
	if len(b.lost) > 0 {
		if err := b.writeManifest(kept); err != nil {
			return err
		}
	}
	if !has[pName] && has[ckName] && !pListed {
		l := LostFile{Name: pName}
		b.fromCheckpoint(&l, has)
		b.reportLost(l)
	}
	return nil
}

// fromCheckpoint fills in what the checkpoint of a lost <peer>.P says.
func (b *Backlog) fromCheckpoint(l *LostFile, has map[string]bool) {
	ckName := queue.CheckpointName(b.peer)
	if !has[ckName] {
		return
	}
	if ck, ok := backlogParseCheckpoint(mustRead(filepath.Join(b.dir, ckName))); ok {
		l.Sent = ck.offset
		if ck.left >= 0 {
			l.Entries = ck.left
		}
	}
}

// reportLost records a lost file and logs it at error.
func (b *Backlog) reportLost(l LostFile) {
	b.lost = append(b.lost, l)
	b.log.Error("backlog: a file the peer's queue named is gone; the acknowledged articles in it are lost",
		"peer", b.peer, "file", l.Name, "articles", l.Entries, "at_least", l.Open, "bytes", l.Bytes, "octets_sent_before", l.Sent)
}
