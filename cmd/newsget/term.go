package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// progressTerm is the terminal shared by the progress bar and the log:
// the bar is redrawn in place on the last line; a log line first clears
// it, is written whole on its own line, and the bar is drawn again below
// it, so the two never interleave.
type progressTerm struct {
	mu  sync.Mutex
	w   io.Writer
	bar string // shown now; "" when none
}

// draw replaces the bar ("" removes it).
func (t *progressTerm) draw(bar string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	io.WriteString(t.w, "\r\033[K"+bar)
	t.bar = bar
}

// Write writes log output above the bar.
func (t *progressTerm) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bar != "" {
		io.WriteString(t.w, "\r\033[K")
	}
	n, err := t.w.Write(p)
	if t.bar != "" {
		io.WriteString(t.w, t.bar)
	}
	return n, err
}

// interruptContext is a context that SIGINT and SIGTERM cancel; code
// reports the exit status the signal asks for (130 for SIGINT, 143 for
// SIGTERM, as shells do) or 0 when none came.
func interruptContext() (ctx context.Context, stop func(), code func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var got atomic.Int32
	go func() {
		select {
		case s := <-ch:
			if s == syscall.SIGTERM {
				got.Store(143)
			} else {
				got.Store(130)
			}
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel() }, func() int { return int(got.Load()) }
}
