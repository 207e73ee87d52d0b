package postproc

import (
	"context"

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
}

// PostProcess implements serve.PostProcessor.
func (p *Processor) PostProcess(ctx context.Context, job serve.PostJob) serve.PostResult {
	pw := job.Password
	if pw == "" {
		pw, _ = unpack.PasswordFromName(job.Name)
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
	res := Run(ctx, Job{Dir: job.Dir, Name: job.Name, Password: pw, Files: job.Files}, o)
	if res.Err != nil {
		return serve.PostResult{Status: serve.Failed, Reason: res.Err.Error(), Encrypted: unpack.Encrypted(res.Err)}
	}
	if len(job.Files) == 0 {
		return serve.PostResult{Status: serve.Failed, Reason: "no files downloaded"}
	}
	return serve.PostResult{Status: serve.Completed}
}
