package dlqueue

import (
	"strings"
	"unicode"
)

// Known is a job the daemon already has (queued or in the history).
type Known struct {
	ID   string
	Name string // the job's name as shown
	Hash string // a hash of the NZB's contents
}

// NormName is the form names are compared in: without a .nzb suffix,
// lower case, with runs of separators (space . _ -) as one space, so
// "Show.S01E01.720p.nzb" and "show s01e01 720p" are the same.
func NormName(name string) string {
	name = strings.TrimSpace(name)
	if len(name) > 4 && strings.EqualFold(name[len(name)-4:], ".nzb") {
		name = name[:len(name)-4]
	}
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(name) {
		if r == '.' || r == '_' || r == '-' || unicode.IsSpace(r) {
			sep = b.Len() > 0
			continue
		}
		if sep {
			b.WriteByte(' ')
			sep = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Duplicate reports whether a new NZB (its name and content hash) is one
// the daemon already has, which one, and why ("same content" wins over
// "same name").
func Duplicate(known []Known, name, hash string) (Known, string, bool) {
	for _, k := range known {
		if hash != "" && k.Hash == hash {
			return k, "same NZB content as " + k.Name, true
		}
	}
	n := NormName(name)
	for _, k := range known {
		if n != "" && NormName(k.Name) == n {
			return k, "same name as " + k.Name, true
		}
	}
	return Known{}, "", false
}
