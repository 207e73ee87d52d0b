package newsfeed

import (
	"sync/atomic"

	"github.com/newsflow/newsflow/proto"
)

// Skips counts, per peer, the articles the masterfeed did not give it, by
// reason: its patterns want none of the newsgroups, its pathname is in the
// article's Path, or the article is over its max_size.
type Skips struct {
	Groups, Path, Size atomic.Int64
}

// Wants is the masterfeed's decision for one peer (the relay's and the
// cluster node's): whether the peer with patterns pat and configuration cfg
// gets a copy of an article with these newsgroups, Path (as it arrived,
// before our own entry) and size. A refusal is counted in skips.
func Wants(pat *proto.GroupPatterns, cfg *PeerConfig, skips *Skips, groups []string, path string, size int64) bool {
	switch {
	case !pat.WantsGroups(groups):
		skips.Groups.Add(1)
	case cfg.PathName != "" && proto.PathContains(path, cfg.PathName):
		skips.Path.Add(1)
	case cfg.MaxSize > 0 && size > int64(cfg.MaxSize):
		skips.Size.Add(1)
	default:
		return true
	}
	return false
}
