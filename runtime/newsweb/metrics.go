package newsweb

import (
	"github.com/prometheus/client_golang/prometheus"

	mreader "github.com/newsflow/newsflow/machine/reader"
)

// Metrics are the Prometheus collectors of the service layer. A nil
// *Metrics records nothing, so tests need not register any.
type Metrics struct {
	CacheHits   *prometheus.CounterVec // by cache (article, threads, ...)
	CacheMisses *prometheus.CounterVec // by cache
	QueueDepth  *prometheus.GaugeVec   // requests waiting, by server and priority
	Commands    *prometheus.CounterVec // NNTP commands sent by the reader client, by server and command
	Requests    *prometheus.CounterVec // requests run by workers, by server, priority and outcome
	Coalesced   *prometheus.CounterVec // asks answered by another ask's fetch, by level (federated, server)
	Connections *prometheus.CounterVec // connections made, by server and transport (tls, starttls, plain)

	// hits and misses are CacheHits' and CacheMisses' series by cache
	// kind, looked up once: page views look caches up on every view.
	hits, misses [mreader.NumCacheKinds]prometheus.Counter
}

// NewMetrics creates the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		CacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "newsweb_cache_hits_total", Help: "Cache lookups that found a live entry, by cache.",
		}, []string{"cache"}),
		CacheMisses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "newsweb_cache_misses_total", Help: "Cache lookups that found nothing (or an expired entry), by cache.",
		}, []string{"cache"}),
		QueueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "newsweb_queue_depth", Help: "Requests waiting for a worker, by server and priority.",
		}, []string{"server", "priority"}),
		Commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "newsweb_nntp_commands_total", Help: "NNTP commands sent by reader connections (after the handshake), by server and command.",
		}, []string{"server", "command"}),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "newsweb_nntp_requests_total", Help: "Requests run by workers, by server, priority and outcome (ok, not_found, error).",
		}, []string{"server", "priority", "outcome"}),
		Coalesced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "newsweb_coalesced_total", Help: "Asks that waited for an identical ask already in flight, by level.",
		}, []string{"level"}),
		Connections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "newsweb_nntp_connections_total", Help: "NNTP connections established, by server and transport.",
		}, []string{"server", "transport"}),
	}
	for k := range mreader.NumCacheKinds {
		m.hits[k], m.misses[k] = m.CacheHits.WithLabelValues(k.String()), m.CacheMisses.WithLabelValues(k.String())
	}
	if reg != nil {
		reg.MustRegister(m.CacheHits, m.CacheMisses, m.QueueDepth, m.Commands, m.Requests, m.Coalesced, m.Connections)
	}
	return m
}

func (m *Metrics) cacheLookup(kind mreader.CacheKind, hit bool) {
	if m == nil {
		return
	}
	series, vec := &m.misses, m.CacheMisses
	if hit {
		series, vec = &m.hits, m.CacheHits
	}
	if kind < mreader.NumCacheKinds {
		series[kind].Inc()
		return
	}
	vec.WithLabelValues(kind.String()).Inc() // not a kind: shows up as cache(N)
}

func (m *Metrics) queueDepth(server string, p mreader.Priority, n int) {
	if m != nil {
		m.QueueDepth.WithLabelValues(server, p.String()).Set(float64(n))
	}
}

func (m *Metrics) commands(server string, delta map[string]int) {
	if m == nil {
		return
	}
	for cmd, n := range delta {
		m.Commands.WithLabelValues(server, cmd).Add(float64(n))
	}
}

func (m *Metrics) request(server string, p mreader.Priority, outcome string) {
	if m != nil {
		m.Requests.WithLabelValues(server, p.String(), outcome).Inc()
	}
}

func (m *Metrics) coalesced(level string) {
	if m != nil {
		m.Coalesced.WithLabelValues(level).Inc()
	}
}

func (m *Metrics) connection(server, transport string) {
	if m != nil {
		m.Connections.WithLabelValues(server, transport).Inc()
	}
}
