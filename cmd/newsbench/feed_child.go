package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
)

// runningNewsfeed is a newsfeed child process started by startNewsfeed.
type runningNewsfeed struct {
	cmd     *exec.Cmd
	logName string // its stdout and stderr
	addr    string // its ingest address
	logf    *os.File
	exited  chan struct{}
}

// startNewsfeed runs bin -config cfg in its own process group, its output
// in dir/newsfeed.log, and waits (10 s at most) until it has written its
// ingest address into spool.
func startNewsfeed(bin, cfg, dir, spool string) (*runningNewsfeed, error) {
	nf := &runningNewsfeed{logName: filepath.Join(dir, "newsfeed.log"), exited: make(chan struct{})}
	logf, err := os.Create(nf.logName)
	if err != nil {
		return nil, err
	}
	nf.logf = logf
	nf.cmd = exec.Command(bin, "-config", cfg)
	nf.cmd.Stdout, nf.cmd.Stderr = logf, logf
	nf.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := nf.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start newsfeed: %w", err)
	}
	go func() { nf.cmd.Wait(); close(nf.exited) }()
	for deadline := time.Now().Add(10 * time.Second); nf.addr == ""; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			nf.stop()
			return nil, fmt.Errorf("no ingest address from newsfeed\n%s", tail(nf.logName, 20))
		}
		nf.addr, _, _ = newsfeed.ReadAddrs(spool)
	}
	return nf, nil
}

// stop ends the child: SIGTERM (it flushes its queues), then SIGKILL to
// its process group after 30 s.
func (nf *runningNewsfeed) stop() {
	syscall.Kill(nf.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-nf.exited:
	case <-time.After(30 * time.Second):
		syscall.Kill(-nf.cmd.Process.Pid, syscall.SIGKILL)
		<-nf.exited
	}
	nf.logf.Close()
}
