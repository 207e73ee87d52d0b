package queue

import "fmt"

// The manifest <peer>.M: the queue's durable list of the peer's .B, .D and
// .P files with the entries each holds, so that a file deleted under the
// relay is reported at the next start: a backlog file deleted by a person
// or a cleaning script holds acknowledged articles, and losing them without
// a word is the worst thing a relay can do.
//
// Rules, in the order spoolfs carries them out (its durability rules):
//
//   - A name is listed only once its file is on disk: the manifest is asked
//     for AFTER RotateBacklog and PromoteToReplay. A crash before it leaves a
//     file the manifest does not list, which Recover adopts as it always has.
//   - A name is unlisted BEFORE its file goes: the manifest is asked for
//     before DeleteBacklog, DeleteReplay and QuarantineReplay. A crash between
//     leaves an unlisted file, adopted (its entries are sent again:
//     duplicates, not losses).
//   - A promotion renames a listed .B/.D file to an unlisted <peer>.P; a
//     crash before the next manifest leaves the old name listed and gone
//     beside an unlisted <peer>.P, which Recover takes for that rename.
//   - It is written when the list changes shape, never per entry: the
//     current file of each kind is listed Open, with the count it had then
//     (a lower bound); a rotation lists it again sealed, with its final
//     count, and Shutdown lists every file with exact counts.
//   - For <peer>.P the count is what was not yet settled; each Checkpoint
//     carries that count too (Checkpoint.Left), so a <peer>.P lost while
//     replaying is reported with the entries not yet sent.
//
// A failed manifest write changes nothing in the queue: the next one lists
// the whole state again (spoolfs removes a manifest it could not replace, so
// a stale one never accuses a file the queue deleted).

// emitManifest asks for the manifest of the files as the queue knows them
// now.
func (q *Queue) emitManifest() {
	m := WriteManifest{Files: make([]ManifestFile, 0, len(q.files)+1)}
	for _, f := range q.files {
		if f.gone {
			continue
		}
		m.Files = append(m.Files, ManifestFile{Name: f.name, Entries: f.entries, Bytes: f.bytes,
			Open: q.current[kindIndex(f.kind)] == f})
	}
	if q.replayOpen() {
		m.Files = append(m.Files, ManifestFile{Name: ReplayName(q.cfg.Peer), Entries: q.rp.unread + q.rp.pending, Bytes: q.rp.bytes})
	}
	q.emit(m)
}

// recoverLost counts the entries of the files Recover found gone: they enter
// through Recovered, like every entry found at start, and end Lost.
func (q *Queue) recoverLost(lost []LostFile) error {
	for _, l := range lost {
		if l.Entries < 0 || l.Bytes < 0 || l.Sent < 0 {
			return fmt.Errorf("queue %s: lost file %q with negative counts", q.cfg.Peer, l.Name)
		}
		q.moveN(Absent, OnRecoverLost, l.Entries)
		q.recovered += l.Entries
	}
	return nil
}
