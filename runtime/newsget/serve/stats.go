package serve

import (
	"maps"
	"sort"
	"time"
)

// serverStats counts, per server, what it delivered: articles, their
// bytes (the NZB's article sizes), articles it did not have, bytes per
// day, and a speed sampled once a second. The counts are kept in
// <queue_dir>/serve/stats.json (written every statsSaveEvery and when the
// daemon stops), so that day, week, month and total survive restarts, as
// SABnzbd's server_stats.
type serverStats struct {
	by    map[string]*ServerStat
	dirty bool
}

// statsSaveEvery is how often changed statistics are written.
const statsSaveEvery = 10 * time.Second

// maxDays bounds the days of bytes kept per server.
const maxDays = 400

// ServerStat is one server's counters.
type ServerStat struct {
	Name     string           `json:"name"`
	Articles int64            `json:"articles"`
	Bytes    int64            `json:"bytes"`
	Failures int64            `json:"failures"` // articles it did not deliver
	Daily    map[string]int64 `json:"daily"`    // bytes by day, "2006-01-02" in local time
	Speed    float64          `json:"speed"`    // bytes per second, smoothed
	// History is the speed of the last minutes, a sample a second, oldest
	// first (the page's chart).
	History []float64 `json:"-"`
	last    int64
}

// speedHistory is how many seconds of speed History keeps.
const speedHistory = 300

func newServerStats() *serverStats { return &serverStats{by: map[string]*ServerStat{}} }

func (s *serverStats) get(name string) *ServerStat {
	st := s.by[name]
	if st == nil {
		st = &ServerStat{Name: name}
		s.by[name] = st
	}
	if st.Daily == nil {
		st.Daily = map[string]int64{}
	}
	return st
}

func (s *serverStats) done(server string, bytes int64, now time.Time) {
	st := s.get(server)
	st.Articles++
	st.Bytes += bytes
	st.Daily[now.Format(time.DateOnly)] += bytes
	s.dirty = true
}

func (s *serverStats) failed(server string) { s.get(server).Failures++; s.dirty = true }

// sample updates the speeds; called once a second. With no download
// running every server's speed is 0, as the daemon's is, not what is
// left of the last one's average.
func (s *serverStats) sample(running bool) {
	for _, st := range s.by {
		st.Speed = 0.5*st.Speed + 0.5*float64(st.Bytes-st.last)
		if !running {
			st.Speed = 0
		}
		st.last = st.Bytes
		st.History = append(st.History, st.Speed)
		if len(st.History) > speedHistory {
			st.History = st.History[len(st.History)-speedHistory:]
		}
	}
}

// load takes the saved counters.
func (s *serverStats) load(saved []ServerStat) {
	for _, sv := range saved {
		st := s.get(sv.Name)
		st.Articles, st.Bytes, st.Failures, st.last = sv.Articles, sv.Bytes, sv.Failures, sv.Bytes
		maps.Copy(st.Daily, sv.Daily)
	}
}

// saved returns the counters to write, with days older than maxDays
// dropped.
func (s *serverStats) saved(now time.Time) []ServerStat {
	cut := now.AddDate(0, 0, -maxDays).Format(time.DateOnly)
	out := s.list()
	for i := range out {
		for d := range out[i].Daily {
			if d < cut {
				delete(s.by[out[i].Name].Daily, d)
				delete(out[i].Daily, d)
			}
		}
		out[i].History = nil
	}
	return out
}

// sums returns a server's bytes today, this week (since Monday), this
// month and in total.
func (st ServerStat) sums(now time.Time) (day, week, month, total int64) {
	today := now.Format(time.DateOnly)
	monday := now.AddDate(0, 0, -((int(now.Weekday()) + 6) % 7)).Format(time.DateOnly)
	first := now.Format("2006-01") + "-01"
	for d, n := range st.Daily {
		if d == today {
			day += n
		}
		if d >= monday && d <= today {
			week += n
		}
		if d >= first && d <= today {
			month += n
		}
	}
	return day, week, month, st.Bytes
}

// list returns copies sorted by name.
func (s *serverStats) list() []ServerStat {
	out := make([]ServerStat, 0, len(s.by))
	for _, st := range s.by {
		c := *st
		c.Daily = maps.Clone(st.Daily)
		c.History = append([]float64(nil), st.History...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
