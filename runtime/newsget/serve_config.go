package newsget

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// ServeConfig is the [serve] table: newsget serve, the download daemon
// (runtime/newsget/serve).
//
//	[serve]
//	listen       = "127.0.0.1:8085"
//	api_key      = "0123456789abcdef"   # generated and printed once if absent
//	watch_dir    = "/srv/nzb/watch"     # NZBs dropped here are queued, then moved aside
//	complete_dir = "/srv/downloads"     # finished jobs: complete_dir/<category>/<job name>/
//	htpasswd     = "/etc/newsget.htpasswd"  # optional: basic auth on the page (bcrypt-free: {SHA} lines)
//	max_nzb_size = "64M"                # largest NZB accepted (upload, addurl, watch_dir)
//	history_size = 1000                 # history entries kept
//	hostnames    = ["nas.example"]      # names the page and API answer to, besides IP addresses and localhost
//	read_header_timeout = "10s"         # a request's headers must arrive within this
//	read_timeout = "5m"                 # a whole request, body included
//	idle_timeout = "2m"                 # a kept-alive connection with no request is closed
//	addurl_fetches = 2                  # addurl fetches at once; more wait their turn
//	addurl_allow_private = false        # addurl may fetch from loopback, private and link-local addresses
type ServeConfig struct {
	Listen             string            `toml:"listen"`
	APIKey             string            `toml:"api_key"`
	WatchDir           string            `toml:"watch_dir"`
	CompleteDir        string            `toml:"complete_dir"`
	Htpasswd           string            `toml:"htpasswd"`
	MaxNZBSize         tomlconf.Size     `toml:"max_nzb_size"`
	HistorySize        int               `toml:"history_size"`
	Hostnames          []string          `toml:"hostnames"`
	ReadHeaderTimeout  tomlconf.Duration `toml:"read_header_timeout"`
	ReadTimeout        tomlconf.Duration `toml:"read_timeout"`
	IdleTimeout        tomlconf.Duration `toml:"idle_timeout"`
	AddURLFetches      int               `toml:"addurl_fetches"`
	AddURLAllowPrivate bool              `toml:"addurl_allow_private"`
	// BandwidthMax is the line speed a speed limit given in percent
	// (mode=config&name=speedlimit&value=50) is a share of.
	BandwidthMax tomlconf.Size `toml:"bandwidth_max"`
	// NoDupes is what happens to a duplicate NZB: off, tag, pause or
	// fail (SABnzbd's no_dupes).
	NoDupes string `toml:"no_dupes"`
	// Script runs after every job of a category without a script of its
	// own, with SABnzbd's arguments and SAB_* environment; "" or "None":
	// none.
	Script string `toml:"script"`
	// ScriptCanFail: a script's non-zero exit fails the job (else it is
	// only shown in the history's script_line), as SABnzbd's
	// script_can_fail.
	ScriptCanFail bool `toml:"script_can_fail"`
	// Schedule are times of day to pause, resume or set the speed limit
	// ([[serve.schedule]], SABnzbd's scheduler).
	Schedule []ScheduleEntry `toml:"schedule"`
}

// ScheduleEntry is one [[serve.schedule]]: at the time of day At (local,
// "HH:MM") on Days ("" or "*": every day; else a comma list of mon, tue,
// wed, thu, fri, sat, sun or 1-7, Monday 1), do Action: pause, resume, or
// speedlimit with Value (a percentage of bandwidth_max, "50" or "50%", or
// bytes per second, "2M"; "0" removes the limit).
type ScheduleEntry struct {
	At     string `toml:"at"`
	Days   string `toml:"days"`
	Action string `toml:"action"`
	Value  string `toml:"value"`
}

// scheduleDays maps the day words and numbers to weekdays.
var scheduleDays = map[string]time.Weekday{"mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday, "sun": time.Sunday,
	"1": time.Monday, "2": time.Tuesday, "3": time.Wednesday, "4": time.Thursday, "5": time.Friday, "6": time.Saturday, "7": time.Sunday}

// Clock returns the entry's hour and minute.
func (e ScheduleEntry) Clock() (int, int, error) {
	t, err := time.Parse("15:04", strings.TrimSpace(e.At))
	if err != nil {
		return 0, 0, fmt.Errorf("at %q: want HH:MM", e.At)
	}
	return t.Hour(), t.Minute(), nil
}

// OnDay reports whether the entry runs on weekday wd.
func (e ScheduleEntry) OnDay(wd time.Weekday) bool {
	d := strings.TrimSpace(e.Days)
	if d == "" || d == "*" {
		return true
	}
	for _, w := range strings.Split(d, ",") {
		if v, ok := scheduleDays[strings.ToLower(strings.TrimSpace(w))]; ok && v == wd {
			return true
		}
	}
	return false
}

// check says what is wrong with the entry, or "".
func (e ScheduleEntry) check() string {
	if _, _, err := e.Clock(); err != nil {
		return err.Error()
	}
	if d := strings.TrimSpace(e.Days); d != "" && d != "*" {
		for _, w := range strings.Split(d, ",") {
			if _, ok := scheduleDays[strings.ToLower(strings.TrimSpace(w))]; !ok {
				return fmt.Sprintf("days %q: want * or a comma list of mon..sun or 1-7", e.Days)
			}
		}
	}
	switch strings.ToLower(e.Action) {
	case "pause", "resume":
	case "speedlimit":
		v := strings.TrimSuffix(strings.TrimSpace(e.Value), "%")
		if _, err := strconv.Atoi(v); err != nil {
			if _, err := tomlconf.ParseSize(v); err != nil {
				return fmt.Sprintf("value %q: want a percentage (\"50\") or bytes per second (\"2M\")", e.Value)
			}
		}
	default:
		return fmt.Sprintf("action %q: want pause, resume or speedlimit", e.Action)
	}
	return ""
}

// Defaults of [serve].
const (
	DefaultServeListen            = "127.0.0.1:8085"
	DefaultServeReadHeaderTimeout = 10 * time.Second
	DefaultServeReadTimeout       = 5 * time.Minute
	DefaultServeIdleTimeout       = 2 * time.Minute
	DefaultAddURLFetches          = 2
)

// Category is one [[category]]: where a category's jobs land and their
// default priority. The category "*" is the default one.
type Category struct {
	Name     string `toml:"name"`
	Dir      string `toml:"dir"`      // overrides complete_dir/<name>
	Priority string `toml:"priority"` // force | high | normal | low
	Script   string `toml:"script"`   // run after each of its jobs; "None": none (not [serve] script either)
}

// CheckListen checks an HTTP listen address: HOST:PORT with an IP
// address or host name (empty: every address) and a port number 0-65535
// (0: any free port).
func CheckListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want HOST:PORT (\"127.0.0.1:8085\")", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number 0-65535", addr, port)
	}
	if strings.ContainsAny(host, " /@\t\r\n") {
		return fmt.Errorf("%q: %q is not a host name or address", addr, host)
	}
	return nil
}

// CheckServe checks [serve] and [[category]] and fills their defaults.
func (c *Config) CheckServe() error {
	var errs []error
	s := &c.Serve
	set := c.keys.Has
	if s.Listen == "" && !set("serve.listen") {
		s.Listen = DefaultServeListen
	}
	if err := CheckListen(s.Listen); err != nil {
		errs = append(errs, c.errAt("serve.listen", "%v", err))
	}
	for _, d := range []struct {
		key string
		v   *tomlconf.Duration
		def time.Duration
	}{{"serve.read_header_timeout", &s.ReadHeaderTimeout, DefaultServeReadHeaderTimeout},
		{"serve.read_timeout", &s.ReadTimeout, DefaultServeReadTimeout},
		{"serve.idle_timeout", &s.IdleTimeout, DefaultServeIdleTimeout}} {
		if *d.v == 0 && !set(d.key) {
			*d.v = tomlconf.Duration(d.def)
		}
		if *d.v <= 0 {
			errs = append(errs, c.errAt(d.key, "%v: want a positive duration, or leave the key out for %v", time.Duration(*d.v), d.def))
		}
	}
	if s.AddURLFetches == 0 && !set("serve.addurl_fetches") {
		s.AddURLFetches = DefaultAddURLFetches
	}
	if s.AddURLFetches < 1 || s.AddURLFetches > 64 {
		errs = append(errs, c.errAt("serve.addurl_fetches", "%d not in 1..64", s.AddURLFetches))
	}
	for i, h := range s.Hostnames {
		if h == "" || strings.ContainsAny(h, " /:@\t\r\n") {
			errs = append(errs, c.errAt("serve.hostnames", "entry %d, %q: a host name without port or scheme (nas.example)", i+1, h))
		}
	}
	if s.MaxNZBSize == 0 {
		s.MaxNZBSize = 64 << 20
	}
	if s.MaxNZBSize < 0 {
		errs = append(errs, c.errAt("serve.max_nzb_size", "negative"))
	}
	if s.HistorySize == 0 {
		s.HistorySize = 1000
	}
	if s.HistorySize < 0 {
		errs = append(errs, c.errAt("serve.history_size", "negative"))
	}
	if s.BandwidthMax < 0 {
		errs = append(errs, c.errAt("serve.bandwidth_max", "negative"))
	}
	s.NoDupes = strings.ToLower(s.NoDupes)
	switch s.NoDupes {
	case "":
		s.NoDupes = "tag"
	case "off", "tag", "pause", "fail":
	default:
		errs = append(errs, c.errAt("serve.no_dupes", "%q: want off, tag, pause or fail", s.NoDupes))
	}
	for i, e := range s.Schedule {
		if msg := e.check(); msg != "" {
			errs = append(errs, c.errAt("serve.schedule["+strconv.Itoa(i+1)+"]", "%s", msg))
		}
	}
	if s.APIKey != "" && (len(s.APIKey) < 8 || strings.ContainsAny(s.APIKey, " &=?#/\r\n")) {
		errs = append(errs, c.errAt("serve.api_key", "at least 8 characters, none of space & = ? # /"))
	}
	names := map[string]bool{}
	for i := range c.Categories {
		ct := &c.Categories[i]
		key := func(k string) string { return "category[" + strconv.Itoa(i+1) + "]." + k }
		switch {
		case ct.Name == "":
			errs = append(errs, c.errAt(key("name"), "missing"))
		case ct.Name != "*" && (strings.ContainsAny(ct.Name, "/\\\x00") || ct.Name == "." || ct.Name == ".."):
			errs = append(errs, c.errAt(key("name"), "%q: a category is a plain name", ct.Name))
		case names[strings.ToLower(ct.Name)]:
			errs = append(errs, c.errAt(key("name"), "%q used twice", ct.Name))
		}
		names[strings.ToLower(ct.Name)] = true
		ct.Priority = strings.ToLower(ct.Priority)
		switch ct.Priority {
		case "", "force", "high", "normal", "low":
		default:
			errs = append(errs, c.errAt(key("priority"), "%q: want force, high, normal or low", ct.Priority))
		}
	}
	return errors.Join(errs...)
}
