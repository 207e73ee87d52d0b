package newsfeed

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/newsflow/newsflow/proto"
)

// Skips counts, per peer, the articles the masterfeed did not give it, by
// reason: its patterns want none of the newsgroups, its pathname (or one
// of its exclusions) is in the article's Path, the article is over its
// max_size, or outside its hashfeed.
type Skips struct {
	Groups, Path, Size, Hash atomic.Int64
}

// Wants is the masterfeed's decision for one peer (the relay's and the
// cluster node's): whether the peer with patterns pat and configuration cfg
// gets a copy of an article with this Message-ID, newsgroups, Path (as it
// arrived, before our own entry) and size. A refusal is counted in skips.
func Wants(pat *proto.GroupPatterns, cfg *PeerConfig, skips *Skips, id string, groups []string, path string, size int64) bool {
	switch {
	case !pat.WantsGroups(groups):
		skips.Groups.Add(1)
	case pathHoldsAny(path, cfg.PathName):
		skips.Path.Add(1)
	case cfg.MaxSize > 0 && size > int64(cfg.MaxSize):
		skips.Size.Add(1)
	case !cfg.Hashes.wants(id):
		skips.Hash.Add(1)
	default:
		return true
	}
	return false
}

// pathHoldsAny reports whether Path holds the site of a newsfeeds-style
// pathname ("site" or "site/excl1,excl2", as newsfeeds(5) writes the
// site field) or any of its exclusions: the article has been there.
func pathHoldsAny(path, pathname string) bool {
	for name := range pathNames(pathname) {
		if proto.PathContains(path, name) {
			return true
		}
	}
	return false
}

// pathNames yields the names of a pathname: the site and its exclusions.
func pathNames(pathname string) iter.Seq[string] {
	return strings.FieldsFuncSeq(pathname, func(r rune) bool { return r == '/' || r == ',' })
}

// A hashFeed is a peer's hashfeed, as INN's newsfeeds Q flag (and Diablo
// 5.1 on) has it: the article goes to the peer when, for one of its
// ranges, (h mod Mod) + 1 lies in [Lo, Hi], where h is the 32-bit
// big-endian integer at bytes 12-Offset to 16-Offset of the MD5 of the
// Message-ID (Offset 0: its lowest 32 bits). Several sites, or several
// relays, then split one feed between them without coordination:
// "1-2/4" and "3-4/4" take each article once.
type hashFeed []hashRange

// hashRange is one "lo-hi/mod_offset" expression.
type hashRange struct {
	Lo, Hi, Mod uint32
	Offset      int
}

// wants reports whether the hashfeed takes the article with id; an empty
// one takes every article.
func (hf hashFeed) wants(id string) bool {
	if len(hf) == 0 {
		return true
	}
	sum := md5.Sum([]byte(id))
	for _, r := range hf {
		h := binary.BigEndian.Uint32(sum[12-r.Offset : 16-r.Offset])
		if v := h%r.Mod + 1; v >= r.Lo && v <= r.Hi {
			return true
		}
	}
	return false
}

// parseHashFeed parses a hashfeed: one or more expressions "value/mod" or
// "start-end/mod", each optionally followed by "_offset" (0..12), separated
// by commas; the article is fed when one matches. INN's legacy "@" form
// is not taken.
func parseHashFeed(s string) (hashFeed, error) {
	var hf hashFeed
	for _, expr := range strings.Split(s, ",") {
		expr = strings.TrimSpace(expr)
		r, err := parseHashRange(expr)
		if err != nil {
			return nil, fmt.Errorf("hashfeed %q: %w", expr, err)
		}
		hf = append(hf, r)
	}
	return hf, nil
}

func parseHashRange(expr string) (hashRange, error) {
	var r hashRange
	if strings.HasPrefix(expr, "@") {
		return r, errors.New("the legacy \"@\" quickhash is not supported: use value/mod or start-end/mod")
	}
	rng, mod, ok := strings.Cut(expr, "/")
	if !ok {
		return r, errors.New("want value/mod or start-end/mod, optionally _offset")
	}
	if m, off, ok := strings.Cut(mod, "_"); ok {
		o, err := strconv.ParseUint(off, 10, 8)
		if err != nil || o > 12 {
			return r, errors.New("offset after \"_\" must be 0..12")
		}
		mod, r.Offset = m, int(o)
	}
	m, err := strconv.ParseUint(mod, 10, 32)
	if err != nil || m == 0 {
		return r, errors.New("mod must be a number 1..4294967295")
	}
	r.Mod = uint32(m)
	lo, hi, isRange := strings.Cut(rng, "-")
	if !isRange {
		hi = lo
	}
	l, err1 := strconv.ParseUint(lo, 10, 32)
	h, err2 := strconv.ParseUint(hi, 10, 32)
	if err1 != nil || err2 != nil || l < 1 || h < l || h > m {
		return r, fmt.Errorf("values must satisfy 1 <= start <= end <= mod (%d)", m)
	}
	r.Lo, r.Hi = uint32(l), uint32(h)
	return r, nil
}
