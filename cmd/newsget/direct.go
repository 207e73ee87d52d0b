package main

import (
	"context"
	"log/slog"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/newsget/postproc"
	"github.com/newsflow/newsflow/runtime/newsget/unpack"
)

// directUnpacks are the download's direct unpacks (postproc.Early), one
// per job, by the job's name (its NZB file), all within cfg's
// direct_unpack_max.
type directUnpacks map[string]*postproc.Early

// startDirect prepares a direct unpack for each job into cfg's download
// directory; ctx ends them.
func startDirect(ctx context.Context, cfg *newsget.Config, list []newsget.Job, log *slog.Logger) directUnpacks {
	slots := postproc.NewSlots(max(cfg.DirectMax, 1))
	du := directUnpacks{}
	for _, j := range list {
		du[j.Name] = postproc.NewEarly(ctx, cfg.DownloadDir, unpack.Options{Password: jobPassword(j), MaxRatio: cfg.UnpackMaxRatio}, slots, log)
	}
	return du
}

// hook gives each job's notes of the Engine to its direct unpack.
func (du directUnpacks) hook(o *newsget.Options) {
	o.OnFile = func(n newsget.FileNote) {
		if e := du[n.Job]; e != nil {
			e.OnFile(n)
		}
	}
	o.OnSegment = func(n newsget.SegmentNote) {
		if e := du[n.Job]; e != nil {
			e.OnSegment(n)
		}
	}
}

// take hands the direct unpack of the job name to post-processing
// (postproc.Job.Direct, nil when none ran): stop no longer stops it.
func (du directUnpacks) take(name string) *unpack.Direct {
	e := du[name]
	if e == nil {
		return nil
	}
	delete(du, name)
	return e.Downloaded()
}

// stop stops the direct unpacks not taken, and removes what they wrote.
func (du directUnpacks) stop() {
	for n, e := range du {
		e.Stop()
		delete(du, n)
	}
}
