package spoolfs

// Start-up: what OpenJobQueue reads (scan) and what Recover does with it.
// The decisions are jobs.Recover's (the lifecycle table's recovery rows);
// this file finds the facts and carries the decisions out, each with the
// same durable steps as the primitive it completes.

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/newsflow/newsflow/machine/jobs"
)

// JobRecovery reports what Recover did. Nothing is removed that was not
// either an unacknowledged Enqueue, a temporary file or an entry already
// being removed; everything damaged is in quarantine/.
type JobRecovery struct {
	Swept         []string  // temporary files removed (paths relative to the queue directory)
	Requeued      []jobs.ID // were in flight: back in queue/
	Cleaned       []jobs.ID // removals a crash interrupted: finished
	RolledBack    []jobs.ID // entries of an Enqueue that never reached its commit point: removed
	RolledForward []jobs.ID // entries of an Enqueue past its commit point: linked into queue/
	Quarantined   []string  // "<what> -> quarantine/<name>: <why>"
	Orphans       []string  // job directories with no entry (an Enqueue that crashed first): removed
}

// stray is something in the queue directory that is no entry.
type stray struct {
	rel    string
	reason string
}

// jobScan is what scan found, for Recover.
type jobScan struct {
	found   map[jobs.ID]jobs.Found
	reasons map[jobs.ID]string // why an entry's data is corrupt or missing
	strays  []stray
	temps   []string
	jobDirs map[string]int // data/<job> -> number of entry directories in it
}

// scan reads the link directories and data/, and sets the ledger to the
// state each entry was found in. It changes nothing on disk.
func (q *JobQueue) scan() error {
	s := &jobScan{found: map[jobs.ID]jobs.Found{}, reasons: map[jobs.ID]string{}, jobDirs: map[string]int{}}
	for _, p := range []jobs.Places{jobs.InQueue, jobs.InInflight, jobs.InCleanup} {
		dir := placeDir(p)
		des, err := os.ReadDir(q.path(dir))
		if err != nil {
			return err
		}
		for _, de := range des {
			rel := filepath.Join(dir, de.Name())
			id, err := jobs.ParseID(de.Name())
			if err != nil {
				s.strays = append(s.strays, stray{rel, "not an entry name"})
				continue
			}
			if de.Type()&fs.ModeSymlink == 0 {
				s.strays = append(s.strays, stray{rel, "not a symbolic link"})
				continue
			}
			target, err := os.Readlink(q.path(rel))
			if err != nil {
				return err
			}
			if target != linkTarget(id) {
				s.strays = append(s.strays, stray{rel, fmt.Sprintf("links to %q, not %q", target, linkTarget(id))})
				continue
			}
			f := s.found[id]
			f.Links |= p
			f.Data = jobs.DataMissing // until data/ shows otherwise
			s.found[id] = f
			s.reasons[id] = "link without data"
		}
	}

	jobDes, err := os.ReadDir(q.path(jqData))
	if err != nil {
		return err
	}
	for _, jd := range jobDes {
		jobRel := filepath.Join(jqData, jd.Name())
		if jobs.CheckID(jd.Name()) != nil || !jd.IsDir() {
			s.strays = append(s.strays, stray{jobRel, "not a job directory"})
			continue
		}
		job := jd.Name()
		s.jobDirs[job] = 0
		des, err := os.ReadDir(q.path(jobRel))
		if err != nil {
			return err
		}
		hasContents := false
		var dests []string
		for _, de := range des {
			rel := filepath.Join(jobRel, de.Name())
			switch {
			case de.Name() == jqContents && de.Type().IsRegular():
				hasContents = true
			case strings.HasSuffix(de.Name(), jqTmp) && de.Type().IsRegular():
				s.temps = append(s.temps, rel)
			case de.IsDir() && jobs.CheckID(de.Name()) == nil:
				dests = append(dests, de.Name())
			default:
				s.strays = append(s.strays, stray{rel, "not part of a job"})
			}
		}
		for _, dest := range dests {
			id := jobs.ID{Job: job, Dest: dest}
			s.jobDirs[job]++
			f := s.found[id]
			f.Data, s.reasons[id] = q.examine(id, hasContents, s)
			s.found[id] = f
		}
	}

	// An entry with no link belongs to a committed Enqueue if another entry
	// of its job has one.
	committed := map[string]bool{}
	for id, f := range s.found {
		if f.Links != 0 {
			committed[id.Job] = true
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.schedules = map[jobs.ID]jobs.Schedule{}
	for id, f := range s.found {
		f.Committed = committed[id.Job]
		s.found[id] = f
		d, err := jobs.Recover(id, f)
		if err != nil {
			return err
		}
		q.led.Set(id, d.From)
		if d.From == jobs.Queued && f.Data == jobs.DataIntact {
			q.schedules[id], _ = q.readSchedule(id) // examine read it already
		}
	}
	q.scanned = s
	return nil
}

// examine reads an entry's data directory and says whether it is intact,
// and if not why; it lists the entry's temporary files and anything that
// does not belong in it in s.
func (q *JobQueue) examine(id jobs.ID, hasContents bool, s *jobScan) (jobs.Data, string) {
	destRel := filepath.Join(jqData, id.Job, id.Dest)
	des, err := os.ReadDir(q.path(destRel))
	if err != nil {
		return jobs.DataCorrupt, err.Error()
	}
	for _, de := range des {
		rel := filepath.Join(destRel, de.Name())
		switch {
		case !de.Type().IsRegular():
			s.strays = append(s.strays, stray{rel, "not part of an entry"})
		case strings.HasSuffix(de.Name(), jqTmp):
			s.temps = append(s.temps, rel)
		case de.Name() != jqMetadata && de.Name() != jqSchedule && de.Name() != jqProgress:
			s.strays = append(s.strays, stray{rel, "not part of an entry"})
		}
	}
	if !hasContents {
		return jobs.DataCorrupt, "the job's contents (NZB) is missing"
	}
	if _, err := q.readMetadata(id); err != nil {
		return jobs.DataCorrupt, trimQueuePath(err.Error(), q.dir)
	}
	if _, err := q.readSchedule(id); err != nil {
		return jobs.DataCorrupt, trimQueuePath(err.Error(), q.dir)
	}
	return jobs.DataIntact, ""
}

// trimQueuePath makes paths in a message relative to the queue directory.
func trimQueuePath(msg, dir string) string {
	return strings.ReplaceAll(msg, dir+string(filepath.Separator), "")
}

// Recover brings the queue back to a consistent state after a crash; call
// it once, right after OpenJobQueue. In order: temporary files are swept;
// things that are no entry go to quarantine/; then each entry, as
// jobs.Recover decides: in-flight entries go back to queue/, removals are
// finished, Enqueues are rolled back or forward, damaged entries go to
// quarantine/; last, job directories left without entries are removed.
// Every step is durable (fsynced) before Recover returns.
func (q *JobQueue) Recover() (JobRecovery, error) {
	q.syncMu.Lock()
	defer q.syncMu.Unlock()
	var rec JobRecovery
	if err := q.usable(); err != nil {
		return rec, err
	}
	s := q.scanned
	if s == nil {
		return rec, errors.New("jobqueue: recover: already recovered (reopen to recover again)")
	}
	touched := map[string]bool{}

	// Temporary files: a replacement that never got renamed.
	dirs := map[string]bool{}
	for _, rel := range s.temps {
		if err := q.remove(rel, "recover:sweep"); err != nil {
			return rec, q.failed("recover", err)
		}
		rec.Swept = append(rec.Swept, rel)
		dirs[filepath.Dir(rel)] = true
	}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		if err := q.fsyncDir(dir); err != nil {
			return rec, q.failed("recover", err)
		}
	}

	// Strays: never ours to delete.
	for _, st := range s.strays {
		to := q.uniqueQuarantine(strings.ReplaceAll(st.rel, string(filepath.Separator), "-"))
		if err := q.rename(st.rel, to, "recover:quarantine"); err != nil {
			return rec, q.failed("recover", err)
		}
		if err := q.fsyncDir(jqQuarantine); err != nil {
			return rec, q.failed("recover", err)
		}
		if err := q.fsyncDir(filepath.Dir(st.rel)); err != nil {
			return rec, q.failed("recover", err)
		}
		rec.Quarantined = append(rec.Quarantined, fmt.Sprintf("%s -> %s: %s", st.rel, to, st.reason))
	}

	ids := slices.Collect(maps.Keys(s.found))
	jobs.SortIDs(ids)
	for _, id := range ids {
		f := s.found[id]
		d, err := jobs.Recover(id, f)
		if err != nil {
			return rec, fmt.Errorf("jobqueue: recover: %w", err)
		}
		name := "recover " + id.String()
		switch {
		case d.To == jobs.Quarantined:
			q.dropLog(id)
			to, err := q.quarantineEntry(id, d, f)
			if err != nil {
				return rec, q.failed(name, err)
			}
			touched[id.Job] = true
			rec.Quarantined = append(rec.Quarantined, fmt.Sprintf("%s (%s) -> %s: %s", id, d.From, to, s.reasons[id]))

		case d.From == jobs.Queued:
			// Kept as it is.

		case d.From == jobs.InFlight:
			q.dropLog(id)
			// A rename over a stale queue/ link (Extra) replaces it.
			if err := q.move(id, d.On, jqInflight, jqQueue, "recover:requeue"); err != nil {
				return rec, err
			}
			sched, _ := q.readSchedule(id) // examine read it already
			q.mu.Lock()
			q.schedules[id] = sched
			q.mu.Unlock()
			rec.Requeued = append(rec.Requeued, id)

		case d.From == jobs.Cleanup:
			if err := q.unlinkExtra(id, d.Extra); err != nil {
				return rec, q.failed(name, err)
			}
			if err := q.cleanup(id, d.On); err != nil {
				return rec, err
			}
			rec.Cleaned = append(rec.Cleaned, id)

		case d.From == jobs.Writing && d.To == jobs.Queued:
			if err := q.check(id, d.On); err != nil {
				return rec, err
			}
			if err := q.symlink(filepath.Join(jqQueue, id.String()), linkTarget(id), "recover:link"); err != nil {
				return rec, q.failed(name, err)
			}
			if err := q.fsyncDir(jqQueue); err != nil {
				return rec, q.failed(name, err)
			}
			sched, _ := q.readSchedule(id)
			q.mu.Lock()
			q.led.Apply(id, d.On)
			q.schedules[id] = sched
			q.mu.Unlock()
			rec.RolledForward = append(rec.RolledForward, id)

		case d.From == jobs.Writing && d.To == jobs.Removed:
			if err := q.removeEntryDir(id); err != nil {
				return rec, q.failed(name, err)
			}
			q.mu.Lock()
			q.led.Apply(id, d.On)
			q.mu.Unlock()
			touched[id.Job] = true
			rec.RolledBack = append(rec.RolledBack, id)

		default:
			return rec, fmt.Errorf("jobqueue: recover %s: no step for %s -%s-> %s", id, d.From, d.On, d.To)
		}
	}

	// Job directories left without entries: their Enqueue crashed before
	// its first entry directory, or their last entry just went.
	for _, job := range slices.Sorted(maps.Keys(s.jobDirs)) {
		if s.jobDirs[job] > 0 && !touched[job] {
			continue
		}
		if _, err := os.Lstat(q.path(filepath.Join(jqData, job))); err != nil {
			continue // cleanup removed it
		}
		removed, err := q.removeJobIfDone(job, "recover")
		if err != nil {
			return rec, q.failed("recover "+job, err)
		}
		if removed && s.jobDirs[job] == 0 {
			rec.Orphans = append(rec.Orphans, filepath.Join(jqData, job))
		}
	}
	q.mu.Lock()
	q.scanned = nil
	q.mu.Unlock()
	return rec, nil
}

// unlinkExtra removes an entry's links in the places extra.
func (q *JobQueue) unlinkExtra(id jobs.ID, extra jobs.Places) error {
	for _, p := range []jobs.Places{jobs.InQueue, jobs.InInflight} {
		if extra&p == 0 {
			continue
		}
		if err := q.remove(filepath.Join(placeDir(p), id.String()), "recover:unlink-extra"); err != nil {
			return err
		}
		if err := q.fsyncDir(placeDir(p)); err != nil {
			return err
		}
	}
	return nil
}

// removeEntryDir removes data/<job>/<dest> and the files in it (an Enqueue
// rolled back).
func (q *JobQueue) removeEntryDir(id jobs.ID) error {
	destDir := filepath.Join(jqData, id.Job, id.Dest)
	des, err := os.ReadDir(q.path(destDir))
	if err != nil {
		return err
	}
	for _, de := range des {
		if err := q.remove(filepath.Join(destDir, de.Name()), "recover:rollback-file"); err != nil {
			return err
		}
	}
	// The job's directory is fsynced (or removed) after all its entries.
	return q.remove(destDir, "recover:rollback")
}

// quarantineEntry moves a damaged entry to quarantine/<id>[.n]: its data
// directory (or an empty one), a hard link to its job's NZB when there is
// one, its links as link-<place>, and a REASON file. It returns the
// quarantine path.
func (q *JobQueue) quarantineEntry(id jobs.ID, d jobs.Decision, f jobs.Found) (string, error) {
	to := q.uniqueQuarantine(id.String())
	destDir := filepath.Join(jqData, id.Job, id.Dest)
	if f.Data == jobs.DataMissing {
		if err := q.mkdir(to, "recover:quarantine"); err != nil {
			return to, err
		}
	} else if err := q.rename(destDir, to, "recover:quarantine"); err != nil {
		return to, err
	}
	contents := filepath.Join(jqData, id.Job, jqContents)
	if err := os.Link(q.path(contents), q.path(filepath.Join(to, jqContents))); err == nil {
		q.op("link %s %s", contents, filepath.Join(to, jqContents))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return to, err
	}
	for _, p := range []jobs.Places{jobs.InQueue, jobs.InInflight, jobs.InCleanup} {
		if f.Links&p == 0 {
			continue
		}
		if err := q.rename(filepath.Join(placeDir(p), id.String()), filepath.Join(to, "link-"+placeDir(p)), "recover:quarantine-link"); err != nil {
			return to, err
		}
		if err := q.fsyncDir(placeDir(p)); err != nil {
			return to, err
		}
	}
	reason := fmt.Sprintf("entry %s, found %s with links in %s: %s\n", id, d.From, f.Links, q.scanned.reasons[id])
	if err := q.writeNew(filepath.Join(to, "REASON"), strings.NewReader(reason), "recover:quarantine-reason"); err != nil {
		return to, err
	}
	if err := q.fsyncDir(to); err != nil {
		return to, err
	}
	if err := q.fsyncDir(jqQuarantine); err != nil {
		return to, err
	}
	// data/<job> is fsynced (or removed) by Recover after all its entries.
	q.mu.Lock()
	q.led.Apply(id, d.On)
	q.mu.Unlock()
	return to, nil
}

// dropLog forgets the loaded progress of entry id (a ReadInflight called
// before Recover), closing its log.
func (q *JobQueue) dropLog(id jobs.ID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if l := q.logs[id]; l != nil {
		l.close()
		delete(q.logs, id)
	}
}
