package newsfeed

import (
	"fmt"
	"os"
	"sync"
)

// LogFile is the relay's log file (log_file): appended to, and reopened
// by name on SIGUSR1 or `newsfeed ctl reopen`, so that logrotate can move
// it away and have the next line go to a new file, as INN's logs do.
type LogFile struct {
	mu   sync.Mutex
	name string
	f    *os.File
}

// OpenLogFile opens name for appending, making it (mode 0640) if needed.
func OpenLogFile(name string) (*LogFile, error) {
	f, err := openAppend(name)
	if err != nil {
		return nil, err
	}
	return &LogFile{name: name, f: f}, nil
}

func openAppend(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("log_file: %w", err)
	}
	return f, nil
}

// Name is the file's name.
func (l *LogFile) Name() string { return l.name }

// Write appends p (one log record) to the current file.
func (l *LogFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// Reopen opens the file by its name again and closes the old one: after
// a rename the log goes on in a new file. When the name cannot be
// opened, the log stays in the old file and the error says why.
func (l *LogFile) Reopen() error {
	f, err := openAppend(l.name)
	if err != nil {
		return err
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	return old.Close()
}

// Close closes the file.
func (l *LogFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// Reopen reopens the log file (Options.ReopenLog) and the article log, for
// logrotate: SIGUSR1 and `newsfeed ctl reopen` call it.
func (r *Relay) Reopen() (string, error) {
	msg := "no log_file: the log goes to standard error"
	if r.opts.ReopenLog != nil {
		if err := r.opts.ReopenLog(); err != nil {
			r.log.Error("log file not reopened: logging goes on in the old file", "err", err)
			return "", fmt.Errorf("reopen: %w", err)
		}
		msg = "log file reopened"
		r.log.Info("log file reopened (SIGUSR1 or newsfeed ctl reopen)")
	}
	if r.alog != nil {
		if err := r.alog.reopen(); err != nil {
			return "", fmt.Errorf("reopen: article log: %w", err)
		}
		msg += "; article log reopened"
	}
	return msg, nil
}
