package newsget

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/newsflow/newsflow/machine/download"
	"github.com/newsflow/newsflow/spoolfs"
)

// writeDurable replaces path with data, durably: write a
// temporary file, fsync it, rename it over path, fsync the directory.
func writeDurable(path string, data []byte) error {
	return writeDurableFunc(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeDurableFunc is writeDurable with the content written by write
// (through a buffer), so that a large file need not be built in memory.
func writeDurableFunc(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("download: write %s: %w", path, err)
	}
	name := tmp.Name()
	bw := bufio.NewWriter(tmp)
	werr := write(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(name, path)
	}
	if werr != nil {
		os.Remove(name)
		return fmt.Errorf("download: write %s: %w", path, werr)
	}
	return spoolfs.SyncDir(dir)
}

// quotaFile is the name of the quota state beside the job queue.
const quotaFile = "quota.json"

// quotaStore persists a download.Quota's counters in queue_dir/quota.json.
type quotaStore struct {
	path  string
	q     download.Quota
	saved download.QuotaState
}

// openQuota reads the persisted counters, if any.
func openQuota(dir string, cfg *Config, loc *time.Location) (*quotaStore, error) {
	s := &quotaStore{path: filepath.Join(dir, quotaFile)}
	s.q = download.Quota{Daily: int64(cfg.DailyQuota), Monthly: int64(cfg.MonthlyQuota), QuotaDay: cfg.QuotaDay, Loc: loc}
	data, err := os.ReadFile(s.path)
	switch {
	case os.IsNotExist(err):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("download: quota state: %w", err)
	}
	st, err := download.ParseQuotaState(data)
	if err != nil {
		return nil, fmt.Errorf("download: %s: %w (remove it to start counting afresh)", s.path, err)
	}
	if err := s.q.Restore(st); err != nil {
		return nil, err
	}
	s.saved = st
	return s, nil
}

// saveState writes counters taken from the quota.
func (s *quotaStore) saveState(st download.QuotaState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := writeDurable(s.path, append(data, '\n')); err != nil {
		return err
	}
	s.saved = st
	return nil
}

// fileInfo is what the first parts of a file told about it, kept in
// queue_dir/files/<job>/<index>.json so a resumed download knows the
// file's name, size and CRC without fetching a finished part again.
type fileInfo struct {
	Name     string `json:"name,omitempty"` // yEnc name=, not sanitised
	Size     int64  `json:"size"`
	CRC32    uint32 `json:"crc32,omitempty"`
	HasCRC32 bool   `json:"has_crc32,omitempty"`
	PartSize int64  `json:"part_size,omitempty"` // regular layout: part n holds [(n-1)*PartSize, n*PartSize)
	// Part is the .part file this job created (so a rerun may reopen or
	// truncate it; any other file of that name is not ours).
	Part string `json:"part,omitempty"`
}
