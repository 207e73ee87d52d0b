package jobs

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ID names one entry: destination Dest of job Job. Both are 1 to MaxIDLen
// characters from [0-9A-Za-z-], so they are safe as file names and the entry's
// link name, Job + "_" + Dest, splits back unambiguously.
type ID struct {
	Job  string
	Dest string
}

// MaxIDLen is the longest job or destination id.
const MaxIDLen = 64

// String returns the entry's link name, "<job>_<dest>".
func (id ID) String() string { return id.Job + "_" + id.Dest }

// ErrBadID is returned for an id with characters outside [0-9A-Za-z-], empty
// or longer than MaxIDLen.
var ErrBadID = errors.New("bad id")

// CheckID reports whether s can be a job or destination id.
func CheckID(s string) error {
	if len(s) == 0 || len(s) > MaxIDLen {
		return fmt.Errorf("jobs: id %q: %w: length %d not in 1..%d", s, ErrBadID, len(s), MaxIDLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-') {
			return fmt.Errorf("jobs: id %q: %w: character %q", s, ErrBadID, c)
		}
	}
	return nil
}

// Check reports whether both halves of id are valid ids.
func (id ID) Check() error {
	if err := CheckID(id.Job); err != nil {
		return err
	}
	return CheckID(id.Dest)
}

// ParseID splits a link name "<job>_<dest>" and checks both halves.
func ParseID(name string) (ID, error) {
	job, dest, ok := strings.Cut(name, "_")
	if !ok {
		return ID{}, fmt.Errorf("jobs: link name %q: %w: no '_'", name, ErrBadID)
	}
	id := ID{Job: job, Dest: dest}
	if err := id.Check(); err != nil {
		return ID{}, fmt.Errorf("jobs: link name %q: %w", name, err)
	}
	return id, nil
}

// SortIDs sorts ids by job, then destination.
func SortIDs(ids []ID) {
	slices.SortFunc(ids, func(a, b ID) int {
		if c := strings.Compare(a.Job, b.Job); c != 0 {
			return c
		}
		return strings.Compare(a.Dest, b.Dest)
	})
}
