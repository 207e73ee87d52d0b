package newsget

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/newsflow/newsflow/machine/download"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/spoolfs"
)

// What an Engine tells a daemon driving it (newsget serve): every
// segment's fate as it is decided, and the job queue's naming of a job.

// SegmentNote is one segment done or failed, for Options.OnSegment.
type SegmentNote struct {
	Job      string // the job's name (Job.Name)
	File     int    // the file's index in the job's NZB
	Name     string // the file's name from the NZB (sanitised)
	Number   int    // the segment's number
	Bytes    int64  // its article bytes from the NZB
	Server   string // done: the server that delivered it
	Failed   bool   // no server had it
	FailedOn []string
}

// noteSegment calls Options.OnSegment. Called with mu held: OnSegment
// must be quick and must not call the Engine.
func (e *Engine) noteSegment(o *outFile, number, server int, verdicts []download.Verdict) {
	if e.opts.OnSegment == nil {
		return
	}
	n := SegmentNote{Job: o.job.name, File: o.idx, Name: o.nzbName, Number: number, Failed: verdicts != nil}
	if in, ok := e.sched.Segment(download.Key{File: o.key, Number: number}); ok {
		n.Bytes = in.Bytes
	}
	if sr := e.byID[server]; sr != nil {
		n.Server = sr.cfg.Label()
	}
	for _, v := range verdicts {
		if sr := e.byID[v.Server]; sr != nil {
			n.FailedOn = append(n.FailedOn, sr.cfg.Label())
		}
	}
	e.opts.OnSegment(n)
}

// FileNote is a file of a job, for Options.OnFile: queued for download
// when the run starts, then finished (complete or not) once.
type FileNote struct {
	Job      string // the job's name (Job.Name)
	File     int    // the file's index in the job's NZB
	Files    int    // the number of files in the job's NZB
	NZBName  string // its name from the NZB (sanitised); the .part is written under it
	Bytes    int64  // its article bytes from the NZB (in the queued note)
	Finished bool   // false: queued for this run
	// When Finished: Name is its final name and Size its size when
	// Complete (whole and verified, also from an earlier run); Held is a
	// recovery volume held back (not an incomplete file).
	Name     string
	Size     int64
	Complete bool
	Held     bool
}

// noteFile calls Options.OnFile for o. Called with mu held: OnFile must
// be quick and must not call the Engine.
func (e *Engine) noteFile(o *outFile) {
	if e.opts.OnFile == nil {
		return
	}
	n := FileNote{Job: o.job.name, File: o.idx, Files: len(o.job.files), NZBName: o.nzbName}
	if o.nzb != nil {
		n.Bytes = o.nzb.Bytes()
	}
	if r := o.result; r != nil {
		n.Finished, n.Name, n.Size, n.Complete, n.Held = true, r.Name, r.Size, r.Complete, r.Held
	}
	e.opts.OnFile(n)
}

// JobID is the name the job queue gives an NZB downloaded into dir (a
// rerun of the same NZB into the same directory resumes it).
func JobID(nzb []byte, dir string) string { return jobID(nzb, dir) }

// ForgetJob removes the job of nzb into cfg.DownloadDir from the job queue
// (and its per-file facts), so a deleted job leaves nothing behind. A job
// not in the queue is not an error. No Engine may have the queue open.
func ForgetJob(cfg *Config, nzb []byte) error {
	id := jobID(nzb, cfg.DownloadDir)
	q, err := spoolfs.OpenJobQueue(filepath.Join(cfg.QueueDir, "jobs"), spoolfs.JobQueueOptions{})
	if err != nil {
		return fmt.Errorf("newsget: forget job: %w", err)
	}
	defer q.Close()
	if _, err := q.Recover(); err != nil {
		return fmt.Errorf("newsget: forget job: recovery: %w", err)
	}
	list, err := q.ListQueue()
	if err != nil {
		return fmt.Errorf("newsget: forget job: %w", err)
	}
	var errs []error
	for _, j := range list {
		if j.ID.Job == id {
			errs = append(errs, q.Drop(j))
		}
	}
	errs = append(errs, os.RemoveAll(filepath.Join(cfg.QueueDir, "files", id)))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("newsget: forget job %s: %w", id, err)
	}
	return nil
}

// DoneBytes returns the NZB's article bytes of the segments the job queue
// records done for the job of nzb into cfg.DownloadDir: how far a job
// stopped (by a kill, say) had come. A job not in the queue has 0. No
// Engine may have the queue open.
func DoneBytes(cfg *Config, nzb []byte) (int64, error) {
	parsed, err := proto.ParseNZB(bytes.NewReader(nzb), proto.NZBLimits{MaxBytes: int64(len(nzb))})
	if err != nil {
		return 0, fmt.Errorf("newsget: done bytes: %w", err)
	}
	id := jobID(nzb, cfg.DownloadDir)
	q, err := spoolfs.OpenJobQueue(filepath.Join(cfg.QueueDir, "jobs"), spoolfs.JobQueueOptions{})
	if err != nil {
		return 0, fmt.Errorf("newsget: done bytes: %w", err)
	}
	defer q.Close()
	if _, err := q.Recover(); err != nil {
		return 0, fmt.Errorf("newsget: done bytes: recovery: %w", err)
	}
	list, err := q.ListQueue()
	if err != nil {
		return 0, fmt.Errorf("newsget: done bytes: %w", err)
	}
	var done int64
	for _, j := range list {
		if j.ID.Job != id {
			continue
		}
		// The progress is read from the job in flight; it goes back to
		// the queue as it was.
		in, err := q.SendStart(j)
		if err != nil {
			return 0, fmt.Errorf("newsget: done bytes: %w", err)
		}
		meta, f, err := q.ReadInflight(in)
		if f != nil {
			f.Close()
		}
		if _, cerr := q.SendCancel(in); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, fmt.Errorf("newsget: done bytes: %w", err)
		}
		for i, fp := range meta.Files {
			if i >= len(parsed.Files) {
				break
			}
			for _, s := range parsed.Files[i].Segments {
				if fp.Done.Has(s.Number) {
					done += s.Bytes
				}
			}
		}
	}
	return done, nil
}
