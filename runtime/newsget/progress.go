package newsget

import "time"

// Progress is a snapshot of a running download, for displays.
type Progress struct {
	Files, FilesDone   int
	Segments, Done     int
	Failed             int
	Received, Decoded  int64
	TotalBytes         int64 // the NZBs' article bytes (an estimate of Received at the end)
	Elapsed            time.Duration
	Connections        int
	Retries            int
	QuotaReached       string
	ServersUnavailable int
}

// Progress returns the current state; safe to call while Download runs.
func (e *Engine) Progress() Progress {
	p := Progress{Received: e.received.Load(), Decoded: e.decoded.Load()}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sched == nil {
		return p
	}
	st := e.sched.Stats()
	p.Segments, p.Done, p.Failed = st.Segments, st.Done, st.Failed
	for _, n := range st.Retries {
		p.Retries += n
	}
	for _, o := range e.files {
		if o.refused != "" {
			continue
		}
		p.Files++
		if o.finished {
			p.FilesDone++
		}
	}
	p.TotalBytes = e.totalBytes
	for _, c := range e.conns {
		if c.up {
			p.Connections++
		}
	}
	for _, sr := range e.servers {
		if sr.gaveUp {
			p.ServersUnavailable++
		}
	}
	p.QuotaReached = e.quotaMsg
	if !e.start.IsZero() {
		p.Elapsed = e.opts.Now().Sub(e.start)
	}
	return p
}
