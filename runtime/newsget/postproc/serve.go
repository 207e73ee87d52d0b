package postproc

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/newsflow/newsflow/runtime/newsget"

	"github.com/newsflow/newsflow/runtime/newsget/serve"
	"github.com/newsflow/newsflow/runtime/newsget/unpack"
)

// Processor is Run as newsget serve's PostProcessor: a job is Completed
// only when every file is whole (repaired if need be) and unpacked; the
// archive password is the job's (serve.Job.Password), else {{password}}
// in its name. The job's PP (SABnzbd's pp) says how far it goes: 0
// checks that every file arrived, 1 repairs, 2 unpacks too, 3 also
// removes the archives (as far as Options allow).
type Processor struct {
	Options Options
	// Direct, when not nil, runs direct unpacks during downloads (Early)
	// within its slots.
	Direct Slots
	// DirectOff (direct_unpack = false) starts no direct unpack for a job
	// that does not ask for one (serve.PostJob.Direct).
	DirectOff bool
}

// NewProcessor is newsget serve's Processor for cfg (checked, its
// directories resolved): fetch held-back recovery volumes with cfg's
// servers, repair, unpack and clean up as cfg says, and direct unpack
// (direct_unpack, direct_unpack_max).
func NewProcessor(cfg *newsget.Config, log *slog.Logger) *Processor {
	p := &Processor{Options: Options{Fetch: EngineFetch(cfg, newsget.Options{Log: log}),
		Unpack: cfg.Unpack == nil || *cfg.Unpack, Cleanup: cfg.Cleanup == nil || *cfg.Cleanup,
		UnpackMaxRatio: cfg.UnpackMaxRatio, Log: log}}
	// The slots are there even with direct_unpack = false: newsget
	// serve's page and API turn direct unpack on for the jobs after.
	p.Direct, p.DirectOff = NewSlots(max(cfg.DirectMax, 1)), cfg.DirectUnpack != nil && !*cfg.DirectUnpack
	return p
}

// StartEarly implements serve.EarlyStarter: the job's direct unpack,
// when the Processor has Direct slots, direct unpack is on (the job's
// Direct, else not DirectOff) and the job is to be unpacked.
func (p *Processor) StartEarly(ctx context.Context, job serve.PostJob) serve.Early {
	on := !p.DirectOff
	if job.Direct != nil {
		on = *job.Direct
	}
	if !on || p.Direct == nil || !p.Options.Unpack || (job.PP != nil && *job.PP < 2) {
		return nil
	}
	return NewEarly(ctx, job.Dir, unpack.Options{Password: jobPassword(job), MaxRatio: p.Options.UnpackMaxRatio}, p.Direct, p.Options.Log)
}

// jobPassword is the password of job's archives: its own, else
// {{password}} in its name.
func jobPassword(job serve.PostJob) string {
	if job.Password != "" {
		return job.Password
	}
	pw, _ := unpack.PasswordFromName(job.Name)
	return pw
}

// PostProcess implements serve.PostProcessor.
func (p *Processor) PostProcess(ctx context.Context, job serve.PostJob) serve.PostResult {
	pw := jobPassword(job)
	var direct *unpack.Direct
	if e, ok := job.Early.(*Early); ok && e != nil {
		direct = e.Downloaded()
	}
	if direct != nil {
		defer direct.Discard() // unless Run's unpack used it
	}
	o := p.Options
	pp := 3
	if job.PP != nil {
		pp = *job.PP
	}
	switch pp {
	case 0:
		return serve.NoPostProcess{}.PostProcess(ctx, job) // download only: complete or not
	case 1:
		o.Unpack, o.Cleanup = false, false
	case 2:
		o.Cleanup = false
	}
	res := Run(ctx, Job{Dir: job.Dir, Name: job.Name, Password: pw, Files: job.Files, Direct: direct}, o)
	if res.Err != nil {
		return serve.PostResult{Status: serve.Failed, Reason: res.Err.Error(), Encrypted: unpack.Encrypted(res.Err), Stages: stages(res)}
	}
	if len(job.Files) == 0 {
		return serve.PostResult{Status: serve.Failed, Reason: "no files downloaded"}
	}
	return serve.PostResult{Status: serve.Completed, Stages: stages(res)}
}

// stages writes what Run did as SABnzbd's stage_log: a Repair stage for
// verification, recovery fetched and files repaired, an Unpack stage for
// the archives unpacked.
func stages(res *Result) []serve.Stage {
	var out []serve.Stage
	var repair []string
	for _, v := range res.Verified {
		if v.Unreadable == "" && v.Missing == 0 {
			repair = append(repair, fmt.Sprintf("[%s] Verified: %d of %d files whole", v.Set, v.Whole, v.Files))
		}
	}
	for _, r := range res.Renamed {
		repair = append(repair, fmt.Sprintf("[%s] Renamed from %s", r.To, r.From))
	}
	if blocks, vols := res.FetchedBlocks(); vols > 0 {
		repair = append(repair, fmt.Sprintf("Fetched %d recovery blocks in %d volumes", blocks, vols))
	}
	for _, r := range res.Repaired {
		repair = append(repair, fmt.Sprintf("[%s] Repaired (%d blocks rebuilt)", r.Name, r.Slices))
	}
	if len(repair) > 0 {
		out = append(out, serve.Stage{Name: "Repair", Actions: repair})
	}
	if res.Unpack != nil {
		var lines []string
		for _, a := range res.Unpack.Archives {
			if a.Err == nil {
				how := ""
				if res.Direct == "used" {
					how = " during the download (direct unpack)"
				}
				files := "files"
				if len(a.Files) == 1 {
					files = "file"
				}
				lines = append(lines, fmt.Sprintf("[%s] Unpacked %d %s%s", a.Name, len(a.Files), files, how))
			}
		}
		if len(lines) > 0 {
			out = append(out, serve.Stage{Name: "Unpack", Actions: lines})
		}
	}
	return out
}
