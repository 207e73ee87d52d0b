package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/newsflow/newsflow/machine/dlqueue"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/spoolfs"
)

// The daemon's durable state, in <queue_dir>/serve/:
//
//	state.json    the queue: jobs in arrival order with their category,
//	              priority, pause flag and last known progress; the global
//	              pause; the arrival counter; for a job whose download
//	              ended, the engine's file results (post-processing's input)
//	history.json  finished jobs, newest first
//	stats.json    the servers' counters (serverStats)
//	nzb/<id>.nzb  each queued job's NZB
//
// Every change is written whole with spoolfs.WriteFileDurable (temp,
// fsync, rename, fsync the directory) before it is acknowledged, so a
// kill -9 leaves the last acknowledged state. Segment progress is not
// here: the engine keeps it in its own durable job queue (spoolfs), keyed
// by the NZB and the job's folder, and resumes from it.

// Job is a queued job.
type Job struct {
	ID        string           `json:"nzo_id"`
	Name      string           `json:"name"`     // the job's name (folder name when done)
	NZBName   string           `json:"nzb_name"` // the NZB's file name as received
	Category  string           `json:"category"`
	Priority  dlqueue.Priority `json:"priority"`
	Paused    bool             `json:"paused,omitempty"`
	Seq       uint64           `json:"seq"`
	Hash      string           `json:"hash"`  // sha256 of the NZB, hex
	Bytes     int64            `json:"bytes"` // the NZB's article bytes
	Left      int64            `json:"left"`  // bytes left, as last known
	Added     time.Time        `json:"added"`
	Duplicate string           `json:"duplicate,omitempty"` // why it was flagged a duplicate
	Files     []JobFile        `json:"files"`
	LastError string           `json:"last_error,omitempty"` // why the last run stopped early
	// Downloaded is set, durably, when the download ended and before
	// post-processing starts: a job that has it goes straight to
	// post-processing after a restart (the engine's record of the job is
	// gone by then, and post-processing may have changed the files).
	Downloaded *Downloaded `json:"downloaded,omitempty"`
	// URL is where addurl fetches the NZB from; Grabbing is set until it
	// is fetched (then the fields above are the NZB's). A grab a stop
	// interrupted starts again at the next start.
	URL       string `json:"url,omitempty"`
	Grabbing  bool   `json:"grabbing,omitempty"`
	GivenName string `json:"given_name,omitempty"` // addurl's nzbname, for the job once fetched
	// Password opens the job's encrypted archives: addfile's password=,
	// else the NZB's <meta type="password">, else {{password}} in nzbname
	// or the NZB's file name.
	Password string `json:"password,omitempty"`
	// PP is SABnzbd's post-processing level of the job (0 download only,
	// 1 +repair, 2 +unpack, 3 +delete); nil: 3.
	PP *int `json:"pp,omitempty"`
}

// Downloaded is what post-processing needs of a finished download.
// Post-processing writes what it did into Files (renamed, repaired,
// removed), so that a retry after it failed starts from the folder as it
// is.
type Downloaded struct {
	Files        []*newsget.FileResult `json:"files"`
	DownloadTime int                   `json:"download_time"` // seconds
	// Names are the files' names as the download wrote them, by their
	// place in the NZB: a retry that downloads again puts renamed files
	// back under these, where the engine finds them complete.
	Names map[int]string `json:"names,omitempty"`
}

// JobFile is one file of a job's NZB, for the fail-fast rule.
type JobFile struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	Done  int64  `json:"done,omitempty"` // bytes of its articles fetched, as last known
}

// HistoryEntry is a finished job (SABnzbd's history slot).
type HistoryEntry struct {
	ID           string    `json:"nzo_id"`
	Name         string    `json:"name"`
	NZBName      string    `json:"nzb_name"`
	Category     string    `json:"category"`
	Status       string    `json:"status"` // Completed or Failed
	FailMessage  string    `json:"fail_message,omitempty"`
	Storage      string    `json:"storage"` // the job's folder
	Bytes        int64     `json:"bytes"`
	Hash         string    `json:"hash"`
	DownloadTime int       `json:"download_time"` // seconds
	Completed    time.Time `json:"completed"`
	Password     string    `json:"password,omitempty"` // the job's, for mode=retry
	// Downloaded: the job failed in post-processing; a retry starts from
	// these results.
	Downloaded *Downloaded `json:"downloaded,omitempty"`
	// Encrypted: the job failed on encrypted archives that no password
	// opened.
	Encrypted bool `json:"encrypted,omitempty"`
	// Stages: what post-processing did (stage_log).
	Stages []Stage `json:"stages,omitempty"`
	// The post-processing script's path, output and last line.
	Script     string `json:"script,omitempty"`
	ScriptLog  string `json:"script_log,omitempty"`
	ScriptLine string `json:"script_line,omitempty"`
	// The job's post-processing level (Job.PP), the URL addurl fetched
	// its NZB from, when it was added, and the seconds post-processing
	// took. FetchFailed: addurl could not fetch a usable NZB.
	PP           *int      `json:"pp,omitempty"`
	URL          string    `json:"url,omitempty"`
	Added        time.Time `json:"added,omitzero"`
	PostprocTime int       `json:"postproc_time,omitempty"`
	FetchFailed  bool      `json:"fetch_failed,omitempty"`
}

// state is state.json.
type state struct {
	Seq      uint64   `json:"seq"`
	Paused   bool     `json:"paused"`
	Queue    []*Job   `json:"queue"`
	Settings settings `json:"settings"`
}

// store reads and writes the files.
type store struct{ dir string }

func (s store) statePath() string   { return filepath.Join(s.dir, "state.json") }
func (s store) historyPath() string { return filepath.Join(s.dir, "history.json") }
func (s store) statsPath() string   { return filepath.Join(s.dir, "stats.json") }
func (s store) nzbPath(id string) string {
	return filepath.Join(s.dir, "nzb", id+".nzb")
}

// open makes the directories and sweeps temps a crash left.
func (s store) open() error {
	if err := os.MkdirAll(filepath.Join(s.dir, "nzb"), 0o755); err != nil {
		return fmt.Errorf("serve: state directory: %w", err)
	}
	temps, _ := filepath.Glob(filepath.Join(s.dir, "*.tmp"))
	more, _ := filepath.Glob(filepath.Join(s.dir, "nzb", "*.tmp"))
	for _, t := range append(temps, more...) {
		os.Remove(t)
	}
	return nil
}

// load reads state.json and history.json (absent files are empty).
func (s store) load() (state, []HistoryEntry, error) {
	var st state
	var hist []HistoryEntry
	if err := readJSON(s.statePath(), &st); err != nil {
		return st, nil, err
	}
	if err := readJSON(s.historyPath(), &hist); err != nil {
		return st, nil, err
	}
	return st, hist, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		// Written whole and renamed into place, the file cannot be torn;
		// garbage here is damage from outside: keep it for people.
		bad := path + ".corrupt"
		os.Rename(path, bad)
		return fmt.Errorf("serve: %s is corrupt (kept as %s): %w", path, bad, err)
	}
	return nil
}

func writeFileJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := spoolfs.WriteFileDurable(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("serve: write %s: %w", path, err)
	}
	return nil
}

func (s store) saveState(st *state) error          { return writeFileJSON(s.statePath(), st) }
func (s store) saveHistory(h []HistoryEntry) error { return writeFileJSON(s.historyPath(), h) }
func (s store) saveNZB(id string, b []byte) error {
	if err := spoolfs.WriteFileDurable(s.nzbPath(id), b, 0o600); err != nil {
		return fmt.Errorf("serve: store NZB: %w", err)
	}
	return nil
}
