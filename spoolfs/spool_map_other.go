//go:build !linux

package spoolfs

import "errors"

// mapArticle is not done outside Linux: MapArticle returns ErrNoMapping
// and callers send the Section.
func mapArticle(*Section) (mem, art []byte, err error) {
	return nil, nil, errors.New("not implemented on this system")
}

// unmapArticle has nothing to undo outside Linux.
func unmapArticle([]byte) error { return nil }
