package spoolfs

// The progress log of an entry in flight: data/<job>/<dest>/progress.
//
// A download finishes a segment every few milliseconds; rewriting the
// metadata each time would cost a file, two fsyncs and a rename per
// segment. Instead each jobs.Record is appended to the entry's log as one
// fixed-size, self-validating record, many records are made
// durable by one fdatasync (Sync), and the log is folded into the metadata
// now and then (Compact), after which it starts again empty.
//
// A record is 40 bytes, integers big-endian:
//
//	0  4  magic "NGPR"
//	4  1  kind: 'D' segment done, 'M' segment missing
//	5  3  zero
//	8  4  file index in the NZB
//	12 4  segment number
//	16 8  'M': first byte of the missing range; 'D': zero
//	24 8  'M': end of the missing range (exclusive); 'D': zero
//	32 4  CRC-32C of bytes 0..31
//	36 4  end marker "NGE\n"
//
// The log only grows by whole records and is only cut to a record
// boundary, so record i is at offset 40*i. Reading it, a slot that fails
// any check is not a record. Invalid slots after the last valid one are
// the torn tail of an append that a crash interrupted: they were never
// acknowledged, so they are cut off. Invalid slots followed by valid ones
// are corruption: the log is copied to quarantine/ and compacted, the bad
// slots skipped (their segments are fetched again: safe).
//
// Replaying a log on top of metadata it was already compacted into changes
// nothing (jobs.Metadata.Apply is idempotent), so a crash between the
// metadata's rename and the log's truncation loses and duplicates nothing.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/newsflow/newsflow/machine/jobs"
)

const progressRecordSize = 40

var (
	progressMagic = [4]byte{'N', 'G', 'P', 'R'}
	progressEnd   = [4]byte{'N', 'G', 'E', '\n'}
	progressCRC   = crc32.MakeTable(crc32.Castagnoli)
)

// appendProgressRecord appends r's 40-byte encoding to dst. r must pass
// Check.
func appendProgressRecord(dst []byte, r jobs.Record) []byte {
	var b [progressRecordSize]byte
	copy(b[0:4], progressMagic[:])
	b[4] = byte(r.Kind)
	binary.BigEndian.PutUint32(b[8:], uint32(r.File))
	binary.BigEndian.PutUint32(b[12:], uint32(r.Segment))
	binary.BigEndian.PutUint64(b[16:], uint64(r.Begin))
	binary.BigEndian.PutUint64(b[24:], uint64(r.End))
	binary.BigEndian.PutUint32(b[32:], crc32.Checksum(b[:32], progressCRC))
	copy(b[36:], progressEnd[:])
	return append(dst, b[:]...)
}

// parseProgressRecord decodes one slot; ok is false unless every check
// passes.
func parseProgressRecord(b []byte) (r jobs.Record, ok bool) {
	if len(b) < progressRecordSize ||
		[4]byte(b[0:4]) != progressMagic || [4]byte(b[36:40]) != progressEnd ||
		b[5] != 0 || b[6] != 0 || b[7] != 0 ||
		binary.BigEndian.Uint32(b[32:]) != crc32.Checksum(b[:32], progressCRC) {
		return r, false
	}
	r = jobs.Record{
		Kind:    jobs.RecordKind(b[4]),
		File:    int(binary.BigEndian.Uint32(b[8:])),
		Segment: int(binary.BigEndian.Uint32(b[12:])),
		Begin:   int64(binary.BigEndian.Uint64(b[16:])),
		End:     int64(binary.BigEndian.Uint64(b[24:])),
	}
	return r, r.Check() == nil
}

// parseProgressLog reads a whole log: the valid records in order, end (the
// offset just after the last valid record: what follows is a torn tail)
// and bad (invalid slots before end: corruption).
func parseProgressLog(data []byte) (recs []jobs.Record, end, bad int) {
	badRun := 0
	for off := 0; off < len(data); off += progressRecordSize {
		r, ok := parseProgressRecord(data[off:])
		if !ok {
			badRun++
			continue
		}
		recs = append(recs, r)
		bad += badRun
		badRun = 0
		end = off + progressRecordSize
	}
	return recs, end, bad
}

// progressLog is the loaded progress of one entry in flight.
type progressLog struct {
	id       jobs.ID
	rel      string // data/<job>/<dest>/progress
	f        *os.File
	meta     jobs.Metadata // the metadata file with every record applied, including buf's
	buf      []byte        // records not yet written to f
	size     int64         // bytes of records in f
	records  int           // records in f
	unsynced bool          // f was written since its last fdatasync
}

func (l *progressLog) close() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// loadLog returns the loaded progress of entry id, reading the metadata
// and the log on first use: it cuts a torn tail, and quarantines a copy
// of a corrupt log and compacts it. The caller holds syncMu and has checked
// that id is in flight.
func (q *JobQueue) loadLog(id jobs.ID) (*progressLog, error) {
	q.mu.Lock()
	l := q.logs[id]
	q.mu.Unlock()
	if l != nil {
		return l, nil
	}
	meta, err := q.readMetadata(id)
	if err != nil {
		return nil, err
	}
	destDir := filepath.Join(jqData, id.Job, id.Dest)
	l = &progressLog{id: id, rel: filepath.Join(destDir, jqProgress), meta: meta}
	f, err := os.OpenFile(q.path(l.rel), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	created := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(q.path(l.rel), os.O_RDWR, 0o644)
	}
	if err != nil {
		return nil, err
	}
	l.f = f
	if created {
		// The log's name must be durable before any record in it is
		// acknowledged.
		q.op("create %s", l.rel)
		if err := q.fsyncDir(destDir); err != nil {
			f.Close()
			return nil, err
		}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil && len(data) > 0 {
		f.Close()
		return nil, err
	}
	recs, end, bad := parseProgressLog(data)
	for _, r := range recs {
		l.meta.Apply(r) // parseProgressRecord checked it
	}
	l.size, l.records = int64(end), len(recs)
	if end < len(data) {
		// A torn tail: an append a crash interrupted, never acknowledged.
		if err := f.Truncate(int64(end)); err != nil {
			f.Close()
			return nil, err
		}
		q.op("truncate %s %d", l.rel, end)
		if err := syncData(f); err != nil {
			f.Close()
			return nil, &fsyncError{err}
		}
		q.op("fsync %s", l.rel)
	}
	q.mu.Lock()
	q.logs[id] = l
	q.mu.Unlock()
	if bad > 0 {
		// Corruption: keep a copy for a person, then start a clean log.
		if err := q.quarantineCopy(id.String()+".progress", data); err != nil {
			return nil, err
		}
		if err := q.compact(l); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// quarantineCopy writes data to a new file quarantine/<name>[.n].
func (q *JobQueue) quarantineCopy(name string, data []byte) error {
	rel := q.uniqueQuarantine(name)
	if err := q.writeNew(rel, bytes.NewReader(data), "quarantine:copy"); err != nil {
		return err
	}
	return q.fsyncDir(jqQuarantine)
}

// uniqueQuarantine returns quarantine/<name>, or quarantine/<name>.<n> for
// the first n from 2 that is free.
func (q *JobQueue) uniqueQuarantine(name string) string {
	rel := filepath.Join(jqQuarantine, name)
	for n := 2; ; n++ {
		if _, err := os.Lstat(q.path(rel)); errors.Is(err, fs.ErrNotExist) {
			return rel
		}
		rel = filepath.Join(jqQuarantine, fmt.Sprintf("%s.%d", name, n))
	}
}

// Record adds progress to an entry in flight whose ReadInflight was called:
// the records are applied to its metadata at once and kept in memory; they
// are durable when a later Sync (or Compact) returns. A record whose
// segment is Done promises that the segment's bytes are already durable in
// the output file. Record does no I/O and never waits for a disk.
func (q *JobQueue) Record(j InflightJob, recs ...jobs.Record) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.broken != nil {
		return q.broken
	}
	if _, err := jobs.Next(j.ID, q.led.State(j.ID), jobs.OnProgress); err != nil {
		return fmt.Errorf("jobqueue: %w", err)
	}
	l := q.logs[j.ID]
	if l == nil {
		return fmt.Errorf("jobqueue: record %s: ReadInflight it first", j.ID)
	}
	for _, r := range recs {
		if err := r.Check(); err != nil {
			return fmt.Errorf("jobqueue: record %s: %w", j.ID, err)
		}
	}
	for _, r := range recs {
		l.meta.Apply(r)
		l.buf = appendProgressRecord(l.buf, r)
	}
	return nil
}

// Sync makes every record given to Record before the call durable: it
// writes each entry's buffered records to its log and fdatasyncs each log
// it wrote, one fsync per entry however many records (group commit). Then it
// compacts logs longer than CompactRecords.
func (q *JobQueue) Sync() error {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	q.mu.Lock()
	if q.broken != nil {
		q.mu.Unlock()
		return q.broken
	}
	var ids []jobs.ID
	for id, l := range q.logs {
		if len(l.buf) > 0 || l.unsynced {
			ids = append(ids, id)
		}
	}
	q.mu.Unlock()
	jobs.SortIDs(ids)
	if err := q.syncLogs(ids); err != nil {
		return q.failed("sync", err)
	}
	for _, id := range ids {
		q.mu.Lock()
		l := q.logs[id]
		long := l != nil && l.records > q.opts.CompactRecords
		q.mu.Unlock()
		if long {
			if err := q.compact(l); err != nil {
				return q.failed("sync: compact "+id.String(), err)
			}
		}
	}
	return nil
}

// syncLogs writes the buffered records of the given entries and fdatasyncs
// their logs. The caller holds syncMu.
func (q *JobQueue) syncLogs(ids []jobs.ID) error {
	var files []*progressLog
	q.mu.Lock()
	for _, id := range ids {
		l := q.logs[id]
		if l == nil {
			continue
		}
		if err := q.flushLocked(l); err != nil {
			q.mu.Unlock()
			return err
		}
		if l.unsynced {
			files = append(files, l)
		}
	}
	q.mu.Unlock()
	// The fdatasyncs run without mu, so Record goes on meanwhile; the
	// files stay open because closing one needs syncMu.
	for _, l := range files {
		if err := syncData(l.f); err != nil {
			return &fsyncError{err}
		}
		q.op("fsync %s", l.rel)
	}
	q.mu.Lock()
	for _, l := range files {
		l.unsynced = false
	}
	q.mu.Unlock()
	return nil
}

// flushLocked writes l's buffered records at the end of its log. A failed
// or short write (ENOSPC) is cut back to the last whole record and the
// records stay buffered for the next try. The caller holds syncMu and mu.
func (q *JobQueue) flushLocked(l *progressLog) error {
	if len(l.buf) == 0 {
		return nil
	}
	if _, err := l.f.WriteAt(l.buf, l.size); err != nil {
		l.f.Truncate(l.size)
		return fmt.Errorf("append to %s: %w", l.rel, err)
	}
	n := len(l.buf) / progressRecordSize
	q.op("append %s %d records", l.rel, n)
	l.size += int64(len(l.buf))
	l.records += n
	l.buf = l.buf[:0]
	l.unsynced = true
	return nil
}

// Compact folds the progress log of an entry in flight into its metadata
// and empties the log; every record given to Record before the call is
// durable when it returns. Call it at milestones (a file finished) so that
// the log stays short and the metadata tells a person how far it got.
func (q *JobQueue) Compact(j InflightJob) error {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	if err := q.check(j.ID, jobs.OnCompact); err != nil {
		return err
	}
	l, err := q.loadLog(j.ID)
	if err != nil {
		return q.failed("compact "+j.ID.String(), err)
	}
	if err := q.compact(l); err != nil {
		return q.failed("compact "+j.ID.String(), err)
	}
	return nil
}

// compact writes l's metadata (temp, fsync, rename, fsync dir) and then
// truncates its log. Records that arrive meanwhile stay in buf: only
// holders of syncMu write to the log. The caller holds syncMu.
func (q *JobQueue) compact(l *progressLog) error {
	q.mu.Lock()
	err := q.flushLocked(l) // so the log holds nothing the metadata lacks
	var data []byte
	if err == nil {
		data, err = encodeJSON(l.meta)
	}
	q.mu.Unlock()
	if err != nil {
		return err
	}
	if err := q.replace(filepath.Join(jqData, l.id.Job, l.id.Dest, jqMetadata), data, "compact"); err != nil {
		return err
	}
	// A crash before the truncation is durable replays the old records on
	// top of the new metadata: harmless. The next fdatasync of the log
	// makes the new size durable with whatever follows.
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("truncate %s: %w", l.rel, err)
	}
	q.op("truncate %s 0", l.rel)
	l.size, l.records = 0, 0
	l.unsynced = true
	return q.hit("compact:truncate")
}
