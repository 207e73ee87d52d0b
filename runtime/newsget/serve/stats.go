package serve

import "sort"

// serverStats counts, per server, what it delivered: articles, their
// bytes (the NZB's article sizes), articles it did not have, and a speed
// sampled once a second.
type serverStats struct {
	by map[string]*ServerStat
}

// ServerStat is one server's counters since the daemon started.
type ServerStat struct {
	Name     string  `json:"name"`
	Articles int64   `json:"articles"`
	Bytes    int64   `json:"bytes"`
	Failures int64   `json:"failures"` // articles it did not deliver
	Speed    float64 `json:"speed"`    // bytes per second, smoothed
	last     int64
}

func newServerStats() *serverStats { return &serverStats{by: map[string]*ServerStat{}} }

func (s *serverStats) get(name string) *ServerStat {
	st := s.by[name]
	if st == nil {
		st = &ServerStat{Name: name}
		s.by[name] = st
	}
	return st
}

func (s *serverStats) done(server string, bytes int64) {
	st := s.get(server)
	st.Articles++
	st.Bytes += bytes
}

func (s *serverStats) failed(server string) { s.get(server).Failures++ }

// sample updates the speeds; called once a second.
func (s *serverStats) sample() {
	for _, st := range s.by {
		st.Speed = 0.5*st.Speed + 0.5*float64(st.Bytes-st.last)
		st.last = st.Bytes
	}
}

// list returns copies sorted by name.
func (s *serverStats) list() []ServerStat {
	out := make([]ServerStat, 0, len(s.by))
	for _, st := range s.by {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
