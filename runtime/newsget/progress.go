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

// ServerState is one configured server as a running download sees it.
type ServerState struct {
	Name         string
	Connections  int       // connections up
	Connecting   int       // connections being dialled
	WasUp        bool      // a connection to it came up in this run
	GaveUp       bool      // given up for the rest of the run (LastErr says why)
	LastErr      string    // its last failure; empty once a connection comes up
	BlockedUntil time.Time // when it is dialled again after failures; zero: not held back
}

// Servers returns the state of every configured server, in configuration
// order; safe to call while Download runs.
func (e *Engine) Servers() []ServerState {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]ServerState, 0, len(e.servers))
	idx := make(map[*serverRun]int, len(e.servers))
	for _, sr := range e.servers {
		idx[sr] = len(out)
		out = append(out, ServerState{Name: sr.cfg.Label(), WasUp: sr.wasUp, GaveUp: sr.gaveUp,
			LastErr: sr.lastErr, BlockedUntil: sr.blockedUntil})
	}
	for _, c := range e.conns {
		i, ok := idx[c.srv]
		if !ok {
			continue
		}
		if c.up {
			out[i].Connections++
		} else {
			out[i].Connecting++
		}
	}
	return out
}
