package newsget

import (
	"path/filepath"

	"github.com/newsflow/newsflow/machine/download"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// FillDefaults writes into c the value of every key the file left out,
// as newsget uses it: after it, c says in full what the program runs
// with. c must be checked (Check, CheckServe) and its directories
// resolved (ResolveDirs).
func (c *Config) FillDefaults() {
	yes := func(p **bool) {
		if *p == nil {
			t := true
			*p = &t
		}
	}
	if c.ArticleRetries == 0 {
		c.ArticleRetries = download.DefaultArticleRetries
	}
	if c.ArticleTimeout == 0 {
		c.ArticleTimeout = tomlconf.Duration(DefaultArticleTimeout)
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = tomlconf.Duration(DefaultConnectTimeout)
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = tomlconf.Duration(DefaultIdleTimeout)
	}
	if c.QuotaDay == 0 {
		c.QuotaDay = 1
	}
	yes(&c.Unpack)
	yes(&c.Cleanup)
	yes(&c.DirectUnpack)
	for i := range c.Servers {
		s := &c.Servers[i]
		yes(&s.CertVerification)
		yes(&s.Active)
		if s.Pipeline == 0 {
			s.Pipeline = download.DefaultPipeline
		}
		if s.IPVersion == "" {
			s.IPVersion = "auto"
		}
	}
	if c.Serve.CompleteDir == "" {
		c.Serve.CompleteDir = filepath.Join(c.DownloadDir, "complete")
	}
	if c.Serve.Hostnames == nil {
		c.Serve.Hostnames = []string{}
	}
	for i := range c.Categories {
		if c.Categories[i].Priority == "" {
			c.Categories[i].Priority = "normal"
		}
	}
}

// AppendTOML appends c as a TOML document that ParseConfig reads back to
// the same configuration: every key of every table, in the order of the
// struct, sizes and durations in the configuration grammar ("64M", "5m")
// (tomlconf.AppendTOML). Nil pointers (keys without a default) are left
// out.
func (c *Config) AppendTOML(dst []byte) []byte {
	return tomlconf.AppendTOML(dst, c)
}

// CheckConfig reports every mistake in a configuration file's text, of
// newsget and of newsget serve, joined in the order of their lines
// (tomlconf.Errors lists them): values of the wrong type, keys it does not
// know and values it refuses together. With no mistake it returns the
// configuration, checked.
func CheckConfig(name string, text []byte) (*Config, error) {
	c, err := parseChecked(name, text, true)
	if err != nil {
		return nil, err
	}
	return c, nil
}
