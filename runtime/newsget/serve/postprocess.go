package serve

import (
	"context"
	"fmt"

	"github.com/newsflow/newsflow/runtime/newsget"
)

// PostProcessor turns a downloaded job's folder into a finished one:
// verify, repair, unpack, clean up. The job's final status comes from it.
// It runs on the daemon's job goroutine, one job at a time; ctx ends when
// the daemon stops (the job is then run again after a restart).
type PostProcessor interface {
	PostProcess(ctx context.Context, job PostJob) PostResult
}

// PostJob is what a PostProcessor gets.
type PostJob struct {
	Dir      string // the folder holding the downloaded files
	Name     string
	Category string
	Password string // of encrypted archives ("" when none is known)
	// PP is SABnzbd's post-processing level: 0 download only (no repair),
	// 1 repair, 2 repair and unpack, 3 (or nil) repair, unpack and delete
	// the archives.
	PP *int
	// Direct, when set, says whether the job unpacks directly (the
	// daemon's direct_unpack as the download starts, which the page and
	// the API change); nil leaves it to the PostProcessor's configuration.
	Direct *bool
	// Files are the engine's results: complete and verified, or
	// incomplete with the byte ranges missing.
	Files []*newsget.FileResult
	// Early is what StartEarly began during this run's download (nil
	// when none: a job downloaded before a restart has none).
	Early Early
}

// EarlyStarter is a PostProcessor that starts work while a job
// downloads: direct unpack.
type EarlyStarter interface {
	// StartEarly is called as the download of job starts (job.Files is
	// nil); nil means nothing to do early. ctx ends with the daemon.
	StartEarly(ctx context.Context, job PostJob) Early
}

// Early is a job's work during its download. It hears the Engine's
// notes (called with the Engine's lock held: quick, and never calling
// the Engine); after the download it goes to PostProcess in
// PostJob.Early, or is stopped.
type Early interface {
	OnSegment(newsget.SegmentNote)
	OnFile(newsget.FileNote)
	// Stop gives the work up and waits for it to end, leaving nothing
	// behind: the download was paused, deleted or stopped.
	Stop()
}

// PostStatus is a post-processed job's outcome.
type PostStatus int

// Outcomes.
const (
	Completed PostStatus = iota // the folder holds the finished files
	Failed                      // Reason says why
)

// PostResult is what a PostProcessor returns.
type PostResult struct {
	Status PostStatus
	Reason string // for Failed: SABnzbd's fail_message
	// Stages are what verify, repair and unpack did, as the history's
	// stage_log shows them.
	Stages []Stage
	// Encrypted: Failed because encrypted archives opened with no
	// password tried.
	Encrypted bool
}

// A Stage is one stage of SABnzbd's stage_log ("Repair", "Unpack") and
// the lines of what it did.
type Stage struct {
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// NoPostProcess is the default PostProcessor: no repair or unpack; a job
// is Completed when every file downloaded complete and verified, Failed
// otherwise (naming the first incomplete file).
type NoPostProcess struct{}

// PostProcess implements PostProcessor.
func (NoPostProcess) PostProcess(_ context.Context, job PostJob) PostResult {
	bad := 0
	first := ""
	for _, f := range job.Files {
		if !f.Complete && !f.Held {
			bad++
			if first == "" {
				first = fmt.Sprintf("%s: %s", f.Name, f.Err)
			}
		}
	}
	if bad > 0 {
		return PostResult{Status: Failed, Reason: fmt.Sprintf("%d of %d files incomplete (%s)", bad, len(job.Files), first)}
	}
	if len(job.Files) == 0 {
		return PostResult{Status: Failed, Reason: "no files downloaded"}
	}
	return PostResult{Status: Completed}
}
