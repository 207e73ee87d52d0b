package serve

import "github.com/prometheus/client_golang/prometheus"

// registry is the daemon's /metrics: queue, history, speed and the
// per-server counters, read from the daemon at scrape time.
func (d *Daemon) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			d.mu.Lock()
			defer d.mu.Unlock()
			return f()
		}))
	}
	gauge("newsget_queue_jobs", "Jobs in the queue.", func() float64 { return float64(len(d.state.Queue)) })
	gauge("newsget_queue_bytes_left", "Bytes left to download in the queue.", func() float64 {
		var n int64
		for _, j := range d.state.Queue {
			n += j.Left
		}
		return float64(n)
	})
	gauge("newsget_paused", "1 when the queue is paused.", func() float64 {
		if d.state.Paused {
			return 1
		}
		return 0
	})
	gauge("newsget_speed_bytes_per_second", "Download speed.", func() float64 { return d.speed })
	reg.MustRegister(&serverCollector{d: d})
	return reg
}

// serverCollector exports the per-server and history counters.
type serverCollector struct{ d *Daemon }

var (
	descBytes    = prometheus.NewDesc("newsget_server_bytes_total", "Article bytes delivered by a server.", []string{"server"}, nil)
	descArticles = prometheus.NewDesc("newsget_server_articles_total", "Articles delivered by a server.", []string{"server"}, nil)
	descFailures = prometheus.NewDesc("newsget_server_failures_total", "Articles a server did not deliver.", []string{"server"}, nil)
	descSpeed    = prometheus.NewDesc("newsget_server_speed_bytes_per_second", "A server's download speed.", []string{"server"}, nil)
	descHistory  = prometheus.NewDesc("newsget_history_jobs", "Finished jobs in the history by status.", []string{"status"}, nil)
)

// Describe implements prometheus.Collector.
func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBytes, descArticles, descFailures, descSpeed, descHistory} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	for _, s := range c.d.stats.list() {
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(s.Bytes), s.Name)
		ch <- prometheus.MustNewConstMetric(descArticles, prometheus.CounterValue, float64(s.Articles), s.Name)
		ch <- prometheus.MustNewConstMetric(descFailures, prometheus.CounterValue, float64(s.Failures), s.Name)
		ch <- prometheus.MustNewConstMetric(descSpeed, prometheus.GaugeValue, s.Speed, s.Name)
	}
	n := map[string]int{"Completed": 0, "Failed": 0}
	for _, h := range c.d.hist {
		n[h.Status]++
	}
	for st, k := range n {
		ch <- prometheus.MustNewConstMetric(descHistory, prometheus.GaugeValue, float64(k), st)
	}
}
