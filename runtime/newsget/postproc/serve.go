package postproc

import (
	"context"

	"github.com/newsflow/newsflow/runtime/newsget/serve"
	"github.com/newsflow/newsflow/runtime/newsget/unpack"
)

// Processor is Run as newsget serve's PostProcessor: a job is Completed
// only when every file is whole (repaired if need be) and unpacked; the
// archive password is the job's (serve.Job.Password), else {{password}}
// in its name.
type Processor struct {
	Options Options
}

// PostProcess implements serve.PostProcessor.
func (p *Processor) PostProcess(ctx context.Context, job serve.PostJob) serve.PostResult {
	pw := job.Password
	if pw == "" {
		pw, _ = unpack.PasswordFromName(job.Name)
	}
	res := Run(ctx, Job{Dir: job.Dir, Name: job.Name, Password: pw, Files: job.Files}, p.Options)
	if res.Err != nil {
		return serve.PostResult{Status: serve.Failed, Reason: res.Err.Error(), Encrypted: unpack.Encrypted(res.Err)}
	}
	if len(job.Files) == 0 {
		return serve.PostResult{Status: serve.Failed, Reason: "no files downloaded"}
	}
	return serve.PostResult{Status: serve.Completed}
}
