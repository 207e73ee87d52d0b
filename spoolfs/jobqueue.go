package spoolfs

// # Theory of operation: the job queue
//
// newsget's jobs (an NZB to download) live in a queue directory, one
// directory per state, written by the package doc's durability rules:
//
//	LOCK                          flock(2)ed by the process that has the queue open
//	data/<job>/contents           the NZB, as given to Enqueue
//	data/<job>/<dest>/metadata    the entry's jobs.Metadata, JSON (target, per-file progress)
//	data/<job>/<dest>/schedule    the entry's jobs.Schedule, JSON (attempts, next attempt)
//	data/<job>/<dest>/progress    the entry's progress log (jobqueue_progress.go)
//	queue/<job>_<dest>            -> ../data/<job>/<dest>   waiting
//	inflight/<job>_<dest>         -> ../data/<job>/<dest>   being downloaded
//	cleanup/<job>_<dest>          -> ../data/<job>/<dest>   being removed
//	quarantine/                   what recovery found damaged, kept for a person
//
// data/ is the only directory that holds anything but symbolic links; the
// links are relative, so the queue directory can be moved. An entry's state
// (jobs.State) is the directory its link is in, so a state change is one
// rename(2) of a link, and every operation takes its durable steps in the
// order of the durable replace, fsyncing what it wrote and the
// directories whose names it changed before it returns:
//
//	Enqueue      mkdir data/<job>; per dest: mkdir, write+fsync schedule and
//	             metadata, fsync the dest dir; write+fsync contents; fsync
//	             data/<job> and data/; then per dest: symlink queue/<id>;
//	             fsync queue/. The first symlink is the commit point.
//	SendStart    rename queue/<id> -> inflight/<id>; fsync both directories
//	SendCancel   sync the progress log; rename inflight/<id> -> queue/<id>; fsync both
//	SendDone     rename inflight/<id> -> cleanup/<id>; fsync both
//	Drop         rename queue/<id> -> cleanup/<id>; fsync both; then Cleanup
//	Cleanup      remove the dest dir's files and the dir; fsync data/<job>;
//	             when only contents is left: remove it and data/<job>, fsync
//	             data/; remove cleanup/<id>; fsync cleanup/
//	Reschedule   write+fsync schedule.tmp; rename over schedule; fsync the dest dir
//	Compact      write+fsync metadata.tmp; rename over metadata; fsync the
//	             dest dir; truncate the progress log
//
// A crash can stop any of these between two steps. Recover, called once
// after OpenJobQueue, looks at what is there and finishes or undoes each
// operation as the table in machine/jobs says: it sweeps *.tmp files,
// moves in-flight entries back to queue/, finishes removals, rolls an
// Enqueue back (no symlink yet: it never returned) or forward (some symlink
// made: every file was already durable), and moves what is damaged (a
// dangling link, unreadable metadata or schedule, a missing NZB, anything
// that does not belong) to quarantine/, never deleting it.
//
// The queue holds the state of every entry in a jobs.Ledger and checks each
// call against the lifecycle table before touching a file, so a call in the
// wrong state (SendDone of a queued entry) is a *jobs.TransitionError and
// changes nothing. A failed fsync is fatal until the queue is reopened (the
// kernel may have dropped the pages a retry would claim are durable), as in
// the spool.
//
// Progress: while an entry is in flight, Record appends its per-file segment
// progress (jobs.Record) to an in-memory buffer, Sync writes every buffer to
// its entry's log and fdatasyncs each log written (one fsync per entry for
// any number of records: group commit), and Compact folds a log
// into the metadata (temp, fsync, rename) and empties it. Sync compacts a
// log by itself when it has grown past JobQueueOptions.CompactRecords.
// ReadInflight returns the metadata with the log applied, so a rerun after
// kill -9 knows every segment whose record a Sync had returned for.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/newsflow/newsflow/machine/jobs"
)

// JobQueueOptions tunes a JobQueue; the zero value is ready to use.
type JobQueueOptions struct {
	// NewID returns a fresh id for a job or destination; it must satisfy
	// jobs.CheckID. Default: 16 random hexadecimal digits. Tests inject a
	// counter so goldens are stable (randomness is an input).
	NewID func() string
	// CompactRecords: Sync compacts a progress log that holds more records
	// than this. Default 8192 (320 KiB of log).
	CompactRecords int
}

// QueuedJob is an entry waiting in queue/.
type QueuedJob struct {
	ID       jobs.ID
	Schedule jobs.Schedule
}

// InflightJob is an entry being downloaded, in inflight/.
type InflightJob struct{ ID jobs.ID }

// CleanupJob is an entry being removed, in cleanup/.
type CleanupJob struct{ ID jobs.ID }

// JobQueue is newsget's durable job queue on a local filesystem. Its
// methods are safe for concurrent use; Record never waits for a disk.
type JobQueue struct {
	dir  string
	opts JobQueueOptions
	lock *os.File

	// syncMu serializes every operation that changes files (all but
	// Record and the listings), so an fdatasync can run without mu.
	syncMu sync.Mutex

	mu        sync.Mutex
	led       jobs.Ledger
	schedules map[jobs.ID]jobs.Schedule // entries in queue/
	logs      map[jobs.ID]*progressLog  // loaded progress of entries in flight
	scanned   *jobScan                  // what OpenJobQueue saw, until Recover
	broken    error                     // set by a failed fsync: every call fails

	// Tests: stop after the crashN-th step named crash ("*": any step), as
	// if the process died there; record the durable steps in ops while
	// trace is on.
	crash  string
	crashN int
	hits   int
	trace  bool
	ops    []string
	seen   map[string]int // crash points passed while trace is on
}

// The subdirectories of a queue directory.
const (
	jqData       = "data"
	jqQueue      = "queue"
	jqInflight   = "inflight"
	jqCleanup    = "cleanup"
	jqQuarantine = "quarantine"
	jqContents   = "contents"
	jqMetadata   = "metadata"
	jqSchedule   = "schedule"
	jqProgress   = "progress"
	jqTmp        = ".tmp"
)

// errJobCrash is returned by an operation stopped at a test crash point.
var errJobCrash = errors.New("simulated crash")

// ErrJobExists is returned by Enqueue for a job id already in the queue.
var ErrJobExists = errors.New("job exists")

// placeDir names the link directory of a place.
func placeDir(p jobs.Places) string {
	switch p {
	case jobs.InQueue:
		return jqQueue
	case jobs.InInflight:
		return jqInflight
	case jobs.InCleanup:
		return jqCleanup
	}
	panic(fmt.Sprintf("spoolfs: no directory for places %s", p))
}

// stateDir names the link directory of an entry in state s.
func stateDir(s jobs.State) string {
	switch s {
	case jobs.Queued:
		return jqQueue
	case jobs.InFlight:
		return jqInflight
	case jobs.Cleanup:
		return jqCleanup
	}
	panic(fmt.Sprintf("spoolfs: no link directory for state %s", s))
}

// OpenJobQueue opens (creating if needed) the queue in dir, locks it
// against other processes and reads which entries are where. Call Recover
// next, once, before anything else.
func OpenJobQueue(dir string, opts JobQueueOptions) (*JobQueue, error) {
	if opts.NewID == nil {
		opts.NewID = randomJobID
	}
	if opts.CompactRecords <= 0 {
		opts.CompactRecords = 8192
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("jobqueue: open %s: %w", dir, err)
	}
	made := false
	for _, sub := range []string{jqData, jqQueue, jqInflight, jqCleanup, jqQuarantine} {
		err := os.Mkdir(filepath.Join(dir, sub), 0o755)
		if err == nil {
			made = true
		} else if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("jobqueue: open %s: %w", dir, err)
		}
	}
	if made {
		if err := SyncDir(dir); err != nil {
			return nil, fmt.Errorf("jobqueue: open %s: %w", dir, err)
		}
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("jobqueue: open %s: %w", dir, err)
	}
	q := &JobQueue{dir: dir, opts: opts, lock: lock, logs: map[jobs.ID]*progressLog{}}
	if err := q.scan(); err != nil {
		lock.Close()
		return nil, fmt.Errorf("jobqueue: open %s: %w", dir, err)
	}
	return q, nil
}

// randomJobID returns 16 random hexadecimal digits.
func randomJobID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Close writes nothing: records not yet made durable by Sync are dropped,
// as a crash would drop them. It closes the progress logs and releases the
// lock. Entries in flight stay in inflight/ for the next Recover.
func (q *JobQueue) Close() error {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, l := range q.logs {
		l.close()
		delete(q.logs, id)
	}
	if q.lock == nil {
		return nil
	}
	err := q.lock.Close()
	q.lock = nil
	if err != nil {
		return fmt.Errorf("jobqueue: close %s: %w", q.dir, err)
	}
	return nil
}

// ListQueue returns the entries waiting in queue/, soonest next attempt
// first, then by id. Use Schedule.Due to pick.
func (q *JobQueue) ListQueue() ([]QueuedJob, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.broken != nil {
		return nil, q.broken
	}
	var out []QueuedJob
	for _, id := range q.led.List(jobs.Queued) {
		out = append(out, QueuedJob{ID: id, Schedule: q.schedules[id]})
	}
	slices.SortStableFunc(out, func(a, b QueuedJob) int { return a.Schedule.Next.Compare(b.Schedule.Next) })
	return out, nil
}

// FindInflight returns the entries in inflight/.
// After Recover there are none but those this process started.
func (q *JobQueue) FindInflight() ([]InflightJob, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.broken != nil {
		return nil, q.broken
	}
	var out []InflightJob
	for _, id := range q.led.List(jobs.InFlight) {
		out = append(out, InflightJob{ID: id})
	}
	return out, nil
}

// FindPendingCleanup returns the entries in cleanup/: SendDone'd or dropped,
// whose Cleanup has not finished.
func (q *JobQueue) FindPendingCleanup() ([]CleanupJob, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.broken != nil {
		return nil, q.broken
	}
	var out []CleanupJob
	for _, id := range q.led.List(jobs.Cleanup) {
		out = append(out, CleanupJob{ID: id})
	}
	return out, nil
}

// Enqueue stores a job: its NZB, read from contents, and one entry per
// element of dests, each with its metadata and a zero schedule (due at
// once); then it queues every entry. An
// empty job gets an id from NewID; a job id already present is an error
// wrapping ErrJobExists, so a caller that derives ids from its input can
// enqueue idempotently. It returns once the job is durable.
func (q *JobQueue) Enqueue(job string, contents io.Reader, dests ...jobs.Metadata) ([]QueuedJob, error) {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	if err := q.usable(); err != nil {
		return nil, err
	}
	if job == "" {
		job = q.opts.NewID()
	}
	if err := jobs.CheckID(job); err != nil {
		return nil, fmt.Errorf("jobqueue: enqueue: %w", err)
	}
	if len(dests) == 0 {
		return nil, fmt.Errorf("jobqueue: enqueue %s: no destination", job)
	}
	ids := make([]jobs.ID, len(dests))
	for i := range dests {
		ids[i] = jobs.ID{Job: job, Dest: q.opts.NewID()}
		if err := ids[i].Check(); err != nil {
			return nil, fmt.Errorf("jobqueue: enqueue: %w", err)
		}
		if slices.Contains(ids[:i], ids[i]) {
			return nil, fmt.Errorf("jobqueue: enqueue %s: NewID returned %s twice", job, ids[i].Dest)
		}
		if err := dests[i].Check(); err != nil {
			return nil, fmt.Errorf("jobqueue: enqueue %s: %w", job, err)
		}
	}
	jobDir := filepath.Join(jqData, job)
	if err := q.mkdir(jobDir, "enqueue:mkdir-job"); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("jobqueue: enqueue %s: %w", job, ErrJobExists)
		}
		return nil, q.failed("enqueue "+job, err)
	}
	q.mu.Lock()
	for _, id := range ids {
		q.led.Apply(id, jobs.OnEnqueue) // Absent -> Writing: the directory was new
	}
	q.mu.Unlock()

	// Before the commit point: on error, remove what was written.
	if err := q.enqueueData(jobDir, ids, contents, dests); err != nil {
		if !errors.Is(err, errJobCrash) && q.broken == nil {
			os.RemoveAll(q.path(jobDir))
			SyncDir(q.path(jqData))
			q.mu.Lock()
			for _, id := range ids {
				q.led.Apply(id, jobs.OnAbort)
			}
			q.mu.Unlock()
		}
		return nil, q.failed("enqueue "+job, err)
	}

	// The commit point: the first link. From here on, recovery completes
	// the job rather than removing it.
	out := make([]QueuedJob, len(ids))
	for i, id := range ids {
		if err := q.symlink(filepath.Join(jqQueue, id.String()), linkTarget(id), "enqueue:link"); err != nil {
			return nil, q.failed(fmt.Sprintf("enqueue %s: linked %d of %d entries (Recover links the rest)", job, i, len(ids)), err)
		}
		q.mu.Lock()
		q.led.Apply(id, jobs.OnCommit)
		q.schedules[id] = jobs.Schedule{}
		q.mu.Unlock()
		out[i] = QueuedJob{ID: id}
	}
	if err := q.fsyncDir(jqQueue); err != nil {
		return nil, q.failed("enqueue "+job, err)
	}
	return out, nil
}

// enqueueData writes and syncs everything of a job but its links.
func (q *JobQueue) enqueueData(jobDir string, ids []jobs.ID, contents io.Reader, dests []jobs.Metadata) error {
	for i, id := range ids {
		destDir := filepath.Join(jobDir, id.Dest)
		if err := q.mkdir(destDir, "enqueue:mkdir-dest"); err != nil {
			return err
		}
		sched, err := encodeJSON(jobs.Schedule{})
		if err != nil {
			return err
		}
		if err := q.writeNew(filepath.Join(destDir, jqSchedule), strings.NewReader(string(sched)), "enqueue:write-schedule"); err != nil {
			return err
		}
		meta, err := encodeJSON(dests[i])
		if err != nil {
			return err
		}
		if err := q.writeNew(filepath.Join(destDir, jqMetadata), strings.NewReader(string(meta)), "enqueue:write-metadata"); err != nil {
			return err
		}
		if err := q.fsyncDir(destDir); err != nil {
			return err
		}
	}
	if err := q.writeNew(filepath.Join(jobDir, jqContents), contents, "enqueue:write-contents"); err != nil {
		return err
	}
	if err := q.fsyncDir(jobDir); err != nil {
		return err
	}
	return q.fsyncDir(jqData)
}

// linkTarget is the relative target of an entry's links.
func linkTarget(id jobs.ID) string {
	return filepath.Join("..", jqData, id.Job, id.Dest)
}

// ReadInflight returns the metadata of an entry in flight, with every
// durable progress record applied, and its job's NZB, open for reading
// (the caller closes it).
func (q *JobQueue) ReadInflight(j InflightJob) (jobs.Metadata, *os.File, error) {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	if err := q.check(j.ID, jobs.OnRead); err != nil {
		return jobs.Metadata{}, nil, err
	}
	l, err := q.loadLog(j.ID)
	if err != nil {
		return jobs.Metadata{}, nil, q.failed("read "+j.ID.String(), err)
	}
	f, err := os.Open(q.path(filepath.Join(jqData, j.ID.Job, jqContents)))
	if err != nil {
		return jobs.Metadata{}, nil, fmt.Errorf("jobqueue: read %s: %w", j.ID, err)
	}
	q.mu.Lock()
	m := l.meta.Clone()
	q.mu.Unlock()
	return m, f, nil
}

// Reschedule replaces the schedule of a queued entry and updates j.
func (q *JobQueue) Reschedule(j *QueuedJob, s jobs.Schedule) error {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	if err := q.check(j.ID, jobs.OnReschedule); err != nil {
		return err
	}
	data, err := encodeJSON(s)
	if err != nil {
		return fmt.Errorf("jobqueue: reschedule %s: %w", j.ID, err)
	}
	if err := q.replace(filepath.Join(jqData, j.ID.Job, j.ID.Dest, jqSchedule), data, "reschedule"); err != nil {
		return q.failed("reschedule "+j.ID.String(), err)
	}
	q.mu.Lock()
	q.led.Apply(j.ID, jobs.OnReschedule)
	q.schedules[j.ID] = s
	q.mu.Unlock()
	j.Schedule = s
	return nil
}

// SendStart moves a queued entry in flight.
func (q *JobQueue) SendStart(j QueuedJob) (InflightJob, error) {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	if err := q.move(j.ID, jobs.OnSendStart, jqQueue, jqInflight, "send-start:rename"); err != nil {
		return InflightJob{}, err
	}
	q.mu.Lock()
	delete(q.schedules, j.ID)
	q.mu.Unlock()
	return InflightJob{ID: j.ID}, nil
}

// SendCancel moves an entry in flight back to the queue, keeping its
// progress: records given to Record before the
// call are made durable first.
func (q *JobQueue) SendCancel(j InflightJob) (QueuedJob, error) {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	if err := q.check(j.ID, jobs.OnSendCancel); err != nil {
		return QueuedJob{}, err
	}
	sched, err := q.readSchedule(j.ID)
	if err != nil {
		return QueuedJob{}, fmt.Errorf("jobqueue: cancel %s: %w", j.ID, err)
	}
	if err := q.syncLogs([]jobs.ID{j.ID}); err != nil {
		return QueuedJob{}, q.failed("cancel "+j.ID.String(), err)
	}
	if err := q.move(j.ID, jobs.OnSendCancel, jqInflight, jqQueue, "send-cancel:rename"); err != nil {
		return QueuedJob{}, err
	}
	// Records that came in during the rename go to the log too.
	err = q.syncLogs([]jobs.ID{j.ID})
	q.dropLog(j.ID)
	q.mu.Lock()
	q.schedules[j.ID] = sched
	q.mu.Unlock()
	if err != nil {
		return QueuedJob{}, q.failed("cancel "+j.ID.String(), err)
	}
	return QueuedJob{ID: j.ID, Schedule: sched}, nil
}

// SendDone moves a downloaded entry to cleanup/;
// Cleanup then removes it. Progress not yet synced is dropped: the entry
// is finished.
func (q *JobQueue) SendDone(j InflightJob) (CleanupJob, error) {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	if err := q.move(j.ID, jobs.OnSendDone, jqInflight, jqCleanup, "send-done:rename"); err != nil {
		return CleanupJob{}, err
	}
	q.dropLog(j.ID)
	return CleanupJob{ID: j.ID}, nil
}

// Drop removes a queued entry without downloading it: it
// moves to cleanup/ and is cleaned up at once. If the cleanup fails, the
// entry stays in cleanup/ for FindPendingCleanup (or Recover).
func (q *JobQueue) Drop(j QueuedJob) error {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	if err := q.move(j.ID, jobs.OnDrop, jqQueue, jqCleanup, "drop:rename"); err != nil {
		return err
	}
	q.mu.Lock()
	delete(q.schedules, j.ID)
	q.mu.Unlock()
	return q.cleanup(j.ID, jobs.OnCleanup)
}

// Cleanup removes an entry in cleanup/, and its job's NZB when no other
// entry of the job is left.
func (q *JobQueue) Cleanup(j CleanupJob) error {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	return q.cleanup(j.ID, jobs.OnCleanup)
}

// cleanup carries out the removal of entry id by event on (OnCleanup, or a
// recovery event): each step tolerates what an earlier, interrupted run
// already removed.
func (q *JobQueue) cleanup(id jobs.ID, on jobs.Event) error {
	if err := q.check(id, on); err != nil {
		return err
	}
	name := "cleanup " + id.String()
	destDir := filepath.Join(jqData, id.Job, id.Dest)
	des, err := os.ReadDir(q.path(destDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("jobqueue: %s: %w", name, err)
	}
	for _, de := range des {
		if err := q.remove(filepath.Join(destDir, de.Name()), "cleanup:remove-file"); err != nil {
			return q.failed(name, err)
		}
	}
	if err == nil {
		if err := q.remove(destDir, "cleanup:remove-dest"); err != nil {
			return q.failed(name, err)
		}
	}
	if _, err := q.removeJobIfDone(id.Job, "cleanup"); err != nil {
		return q.failed(name, err)
	}
	if err := q.remove(filepath.Join(jqCleanup, id.String()), "cleanup:unlink"); err != nil {
		return q.failed(name, err)
	}
	if err := q.fsyncDir(jqCleanup); err != nil {
		return q.failed(name, err)
	}
	q.mu.Lock()
	q.led.Apply(id, on)
	q.mu.Unlock()
	return nil
}

// removeJobIfDone removes data/<job> when it holds nothing but its contents
// any more (then fsyncs data/ and reports true), or else fsyncs data/<job>,
// so that the removals made in it are durable. A data/<job> already gone
// is not an error.
func (q *JobQueue) removeJobIfDone(job, label string) (bool, error) {
	jobDir := filepath.Join(jqData, job)
	des, err := os.ReadDir(q.path(jobDir))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, de := range des {
		if de.Name() != jqContents {
			// Another entry, or a stray for Recover: the job stays, and
			// what was removed from it must be durable.
			return false, q.fsyncDir(jobDir)
		}
	}
	for _, de := range des {
		if err := q.remove(filepath.Join(jobDir, de.Name()), label+":remove-contents"); err != nil {
			return false, err
		}
	}
	if err := q.remove(jobDir, label+":remove-job"); err != nil {
		return false, err
	}
	return true, q.fsyncDir(jqData)
}

// move renames entry id's link from one directory to another by event on,
// and fsyncs both directories (the destination first: the name that must
// exist).
func (q *JobQueue) move(id jobs.ID, on jobs.Event, from, to, label string) error {
	if err := q.check(id, on); err != nil {
		return err
	}
	name := fmt.Sprintf("%s %s", on, id)
	if err := q.rename(filepath.Join(from, id.String()), filepath.Join(to, id.String()), label); err != nil {
		return q.failed(name, err)
	}
	if err := q.fsyncDir(to); err != nil {
		return q.failed(name, err)
	}
	if err := q.fsyncDir(from); err != nil {
		return q.failed(name, err)
	}
	q.mu.Lock()
	q.led.Apply(id, on)
	q.mu.Unlock()
	return nil
}

// check returns an error unless the queue is usable and the table allows
// event on for entry id now.
func (q *JobQueue) check(id jobs.ID, on jobs.Event) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.broken != nil {
		return q.broken
	}
	if q.lock == nil {
		return fmt.Errorf("jobqueue: %s: %s: queue closed", on, id)
	}
	if _, err := jobs.Next(id, q.led.State(id), on); err != nil {
		return fmt.Errorf("jobqueue: %w", err)
	}
	return nil
}

// usable returns an error if the queue is closed or broken.
func (q *JobQueue) usable() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.broken != nil {
		return q.broken
	}
	if q.lock == nil {
		return fmt.Errorf("jobqueue: %s: queue closed", q.dir)
	}
	return nil
}

// readSchedule reads an entry's schedule file.
func (q *JobQueue) readSchedule(id jobs.ID) (jobs.Schedule, error) {
	var s jobs.Schedule
	data, err := os.ReadFile(q.path(filepath.Join(jqData, id.Job, id.Dest, jqSchedule)))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("schedule: %w", err)
	}
	return s, nil
}

// readMetadata reads and checks an entry's metadata file.
func (q *JobQueue) readMetadata(id jobs.ID) (jobs.Metadata, error) {
	var m jobs.Metadata
	data, err := os.ReadFile(q.path(filepath.Join(jqData, id.Job, id.Dest, jqMetadata)))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("metadata: %w", err)
	}
	if err := m.Check(); err != nil {
		return m, fmt.Errorf("metadata: %w", err)
	}
	return m, nil
}

// encodeJSON is the form of metadata and schedule files: indented, for
// people who look, with a final newline.
func encodeJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// failed wraps err for operation name; a failed fsync breaks the queue.
func (q *JobQueue) failed(name string, err error) error {
	if errors.Is(err, errJobCrash) {
		return err
	}
	var fe *fsyncError
	werr := fmt.Errorf("jobqueue: %s: %w", name, err)
	if errors.As(err, &fe) {
		q.mu.Lock()
		if q.broken == nil {
			q.broken = fmt.Errorf("jobqueue %s: broken by a failed fsync, reopen to recover: %w", q.dir, err)
		}
		q.mu.Unlock()
	}
	return werr
}

// fsyncError marks a failed fsync.
type fsyncError struct{ err error }

func (e *fsyncError) Error() string { return e.err.Error() }
func (e *fsyncError) Unwrap() error { return e.err }

// The durable steps. Each takes a path relative to the queue directory,
// records itself in the trace, and (for the steps that change something)
// then checks the test crash point named label.

func (q *JobQueue) path(rel string) string { return filepath.Join(q.dir, rel) }

func (q *JobQueue) op(format string, args ...any) {
	if q.trace {
		q.ops = append(q.ops, fmt.Sprintf(format, args...))
	}
}

// hit returns errJobCrash when the test crash point is reached.
func (q *JobQueue) hit(label string) error {
	if q.trace {
		if q.seen == nil {
			q.seen = map[string]int{}
		}
		q.seen[label]++
	}
	if q.crash == "" || q.crash != label && q.crash != "*" {
		return nil
	}
	q.hits++
	if n := max(q.crashN, 1); q.hits == n {
		q.op("crash")
		return errJobCrash
	}
	return nil
}

func (q *JobQueue) mkdir(rel, label string) error {
	if err := os.Mkdir(q.path(rel), 0o755); err != nil {
		return err
	}
	q.op("mkdir %s", rel)
	return q.hit(label)
}

// writeNew creates rel (which must not exist), copies r into it and
// fdatasyncs it. Its name is durable only when the caller fsyncs the
// directory.
func (q *JobQueue) writeNew(rel string, r io.Reader, label string) error {
	f, err := os.OpenFile(q.path(rel), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	q.op("write %s", rel)
	if err := syncData(f); err != nil {
		f.Close()
		return &fsyncError{err}
	}
	q.op("fsync %s", rel)
	if err := f.Close(); err != nil {
		return err
	}
	return q.hit(label)
}

// replace puts data in rel by the durable replace: write rel.tmp, fsync it,
// rename it over rel, fsync the directory. Crash points: label+":write-temp"
// and label+":rename".
func (q *JobQueue) replace(rel string, data []byte, label string) error {
	tmp := rel + jqTmp
	f, err := os.OpenFile(q.path(tmp), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(q.path(tmp))
		return err
	}
	q.op("write %s", tmp)
	if err := syncData(f); err != nil {
		f.Close()
		return &fsyncError{err}
	}
	q.op("fsync %s", tmp)
	if err := f.Close(); err != nil {
		os.Remove(q.path(tmp))
		return err
	}
	if err := q.hit(label + ":write-temp"); err != nil {
		return err
	}
	if err := q.rename(tmp, rel, label+":rename"); err != nil {
		return err
	}
	return q.fsyncDir(filepath.Dir(rel))
}

func (q *JobQueue) symlink(rel, target, label string) error {
	if err := os.Symlink(target, q.path(rel)); err != nil {
		return err
	}
	q.op("symlink %s -> %s", rel, target)
	return q.hit(label)
}

func (q *JobQueue) rename(from, to, label string) error {
	if err := os.Rename(q.path(from), q.path(to)); err != nil {
		return err
	}
	q.op("rename %s %s", from, to)
	return q.hit(label)
}

// remove removes rel (a file, a link or an empty directory); one already
// gone is not an error, so an interrupted cleanup can run again.
func (q *JobQueue) remove(rel, label string) error {
	if err := os.Remove(q.path(rel)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	q.op("remove %s", rel)
	return q.hit(label)
}

func (q *JobQueue) fsyncDir(rel string) error {
	if err := SyncDir(q.path(rel)); err != nil {
		return &fsyncError{err}
	}
	q.op("fsync %s", rel)
	return nil
}
