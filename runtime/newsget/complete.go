package newsget

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// A finished job leaves queue_dir/complete/<job>.json: the name, size and
// CRC-32 of each file it produced. Running the same NZB into the same
// directory again finds the files there and, when each still has its size
// and CRC-32, reports them "already complete" (exit 0) instead of refusing
// to overwrite them. A file whose parts gave no whole-file CRC is checked by
// size only. Files that cleanup removed after unpacking them
// (MarkRemoved) count as complete while they stay absent.

// completeFile is one file of a finished job.
type completeFile struct {
	Name     string `json:"name"`
	Size     int64  `json:"size"`
	CRC32    uint32 `json:"crc32,omitempty"`
	HasCRC32 bool   `json:"has_crc32,omitempty"`
	Removed  bool   `json:"removed,omitempty"` // by cleanup, after unpacking
}

// completePath is where a finished job's record lives.
func completePath(queueDir, job string) string {
	return filepath.Join(queueDir, "complete", job+".json")
}

// readComplete reads a finished job's record.
func readComplete(queueDir, job string) (map[int]completeFile, bool) {
	data, err := os.ReadFile(completePath(queueDir, job))
	if err != nil {
		return nil, false
	}
	var rec map[int]completeFile
	if json.Unmarshal(data, &rec) != nil {
		return nil, false
	}
	return rec, true
}

// writeComplete replaces a finished job's record, durably.
func writeComplete(queueDir, job string, rec map[int]completeFile) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	p := completePath(queueDir, job)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return writeDurable(p, data)
}

// MarkRemoved records that files of a finished job were removed on purpose
// (archives and PAR2 files, by cleanup after unpacking), so that running
// the same NZB again counts them as complete instead of fetching them
// again. Names not in the job's record are ignored.
func (e *Engine) MarkRemoved(j Job, names []string) error {
	return MarkRemoved(e.cfg, j, names)
}

// MarkRemoved is Engine.MarkRemoved for a job of cfg once its Engine is
// closed (post-processing runs after the download's Engine closed).
func MarkRemoved(cfg *Config, j Job, names []string) error {
	id := jobID(j.NZB, cfg.DownloadDir)
	rec, ok := readComplete(cfg.QueueDir, id)
	if !ok {
		return nil
	}
	gone := map[string]bool{}
	for _, n := range names {
		gone[n] = true
	}
	for i, cf := range rec {
		if gone[cf.Name] {
			cf.Removed = true
			rec[i] = cf
		}
	}
	if err := writeComplete(cfg.QueueDir, id, rec); err != nil {
		return fmt.Errorf("newsget: record removed files: %w", err)
	}
	return nil
}

// SettleJob records a job that post-processing made whole (incomplete
// files repaired from PAR2) as finished, as if it had downloaded
// complete: its entry and progress leave the job queue, and files (the
// job's results, updated to their names now) are recorded complete, so
// running the same NZB again fetches nothing. Files whose yEnc CRC-32 is
// not known here are checked by size on that run.
func SettleJob(cfg *Config, j Job, files []*FileResult) error {
	if err := ForgetJob(cfg, j.NZB); err != nil {
		return err
	}
	rec := map[int]completeFile{}
	for _, f := range files {
		if f.Complete && !f.Held {
			rec[f.Index] = completeFile{Name: f.Name, Size: f.Size, Removed: f.Removed}
		}
	}
	if err := writeComplete(cfg.QueueDir, jobID(j.NZB, cfg.DownloadDir), rec); err != nil {
		return fmt.Errorf("newsget: record repaired job: %w", err)
	}
	return nil
}

// saveComplete records a finished job's files (by index in the NZB).
func (e *Engine) saveComplete(jr *jobRun) error {
	rec := map[int]completeFile{}
	for _, o := range jr.files {
		if o.result == nil || !o.result.Complete {
			continue
		}
		rec[o.idx] = completeFile{Name: o.result.Name, Size: o.result.Size, CRC32: o.info.CRC32, HasCRC32: o.info.HasCRC32,
			Removed: o.result.Removed}
	}
	return writeComplete(e.cfg.QueueDir, jr.id, rec)
}

// alreadyComplete returns the result of file idx of the job when an
// earlier run finished it and the file is still there, unchanged.
func (e *Engine) alreadyComplete(jr *jobRun, idx, segments int) (*FileResult, bool) {
	rec, ok := readComplete(e.cfg.QueueDir, jr.id)
	if !ok {
		return nil, false
	}
	cf, ok := rec[idx]
	if !ok || cf.Name == "" || SanitizeName(cf.Name, "") != cf.Name {
		return nil, false
	}
	path := filepath.Join(e.cfg.DownloadDir, cf.Name)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && cf.Removed {
		return &FileResult{Job: jr.name, Name: cf.Name, Path: path, Size: cf.Size, Complete: true, Already: true, Removed: true, Segments: segments}, true
	}
	if err != nil {
		return nil, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() != cf.Size {
		return nil, false
	}
	if cf.HasCRC32 {
		h := crc32.NewIEEE()
		if _, err := io.Copy(h, f); err != nil || h.Sum32() != cf.CRC32 {
			return nil, false
		}
	}
	return &FileResult{Job: jr.name, Name: cf.Name, Path: path, Size: cf.Size, Complete: true, Already: true, Segments: segments}, true
}
