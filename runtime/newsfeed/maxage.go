package newsfeed

import "time"

// tooOld reports whether an article waited too long for the peer: it
// arrived longer than max_age ago. Such an article is not offered; the
// queue settles it as missing and the peer's TooOld counts it (PeerStats
// reports it apart from Missing).
func (p *peer) tooOld(now time.Time, id string) bool {
	limit := p.cfg.MaxAge.D()
	if limit <= 0 {
		return false
	}
	e, ok := p.r.spool.History().Lookup(id)
	if !ok || e.Arrived.IsZero() || now.Sub(e.Arrived) <= limit {
		return false
	}
	p.tooOldCount.Add(1)
	return true
}
