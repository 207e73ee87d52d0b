package newsfeed

import (
	"fmt"

	"github.com/newsflow/newsflow/spoolfs"
)

// sharedBodies is spoolBodies whose small articles are read through the
// relay's one SharedReadAhead instead of a ReadAhead per connection (or
// per epoll loop): the connections of every peer take the same articles at
// about the same time, so one pread and one CRC check serve every copy of
// an article. Large articles, and everything but AppendBody, are
// spoolBodies' own.
type sharedBodies struct {
	spoolBodies
	shared *spoolfs.SharedReadAhead
}

// Shared windows: sendWindows of readAhead bytes (8 MiB) cover the
// spread of a fan-out's connections over the spool: on each of them a
// window of commands in flight and a window of entries ready (agent),
// and peers some way ahead of others (a backlog drains at each peer's
// pace). With 8 windows on 2 KB x 50k to 4 peers, window reads were still
// 17% of the CPU profile.
const sendWindows = 32

// sendBodies returns the body source of a peer connection.
func (r *Relay) sendBodies() sharedBodies {
	return sharedBodies{spoolBodies: spoolBodies{s: r.spool, bad: &r.badBodies}, shared: r.sendRead}
}

// AppendBody appends the wire article named by token, size bytes, to dst
// (drive.BodyAppender), as spoolBodies.AppendBody does, through the shared
// windows.
func (b sharedBodies) AppendBody(dst []byte, token string, size int64) ([]byte, error) {
	tok, err := spoolfs.ParseToken(token)
	if err != nil {
		b.bad.add(token, err)
		return dst, err
	}
	if int64(tok.Len) != size {
		err := fmt.Errorf("relay: token %s holds %d bytes, want %d", token, tok.Len, size)
		b.bad.add(token, err)
		return dst, err
	}
	out, err := b.shared.AppendArticle(dst, tok)
	if err != nil {
		b.bad.add(token, err)
		err = fmt.Errorf("%w: %w", errUnreadableBody, err)
	}
	return out, err
}
