package newsweb

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// TLSMode says how connections to a server get TLS.
type TLSMode uint8

// TLS modes. Both try TLS first; see ServerConfig.
const (
	TLSStartTLS TLSMode = iota // nntp://: plain TCP, then STARTTLS when offered (RFC 4642)
	TLSImplicit                // nntps://: TLS from the first byte (port 563)
)

// String returns "starttls" or "implicit".
func (m TLSMode) String() string {
	if m == TLSImplicit {
		return "implicit"
	}
	return "starttls"
}

// Defaults for ServerConfig fields left zero.
const (
	DefaultConnections = 4
	DefaultNNTPPort    = "119"
	DefaultNNTPSPort   = "563"
)

// ServerConfig is one NNTP server of the federation.
//
// TLS policy: TLS is tried first
// (implicit TLS or STARTTLS by TLS). When User is set TLS is required: a
// server that offers no STARTTLS, or whose TLS handshake fails, is not used
// (credentials never go over plain text). Without credentials a failed or
// unavailable TLS falls back to plain TCP, and the log says so.
type ServerConfig struct {
	Name        string      // label for logs and metrics; Addr when empty
	Addr        string      // host:port
	TLS         TLSMode     // how TLS is tried
	User, Pass  string      // AUTHINFO USER/PASS; no User means none
	Priority    int         // lower is asked first
	Connections int         // persistent connections (workers); DefaultConnections when 0
	TLSConfig   *tls.Config // roots and the like; nil means system roots, ServerName from Addr
	// Inject, when its Addr is set, makes newsweb the injecting agent of
	// the posts through this server: they are offered with IHAVE there
	// (inject.go) instead of POSTed.
	Inject InjectTarget
}

// InjectTarget is where a server takes posts as a feed: its address, TLS,
// and the AUTHINFO credentials of the feed (none when User is empty).
type InjectTarget struct {
	Addr       string
	TLS        TLSMode
	User, Pass string
}

// withDefaults fills Name and Connections. A server without a name is
// named by a hash of its address: pages, the API and logs show names, and
// readers never learn the backends' addresses.
func (c ServerConfig) withDefaults() ServerConfig {
	if c.Name == "" {
		sum := sha256.Sum256([]byte(c.Addr))
		c.Name = "server-" + hex.EncodeToString(sum[:4])
	}
	if c.Connections <= 0 {
		c.Connections = DefaultConnections
	}
	return c
}

// tlsConfig returns the TLS client configuration for the server.
func (c ServerConfig) tlsConfig() *tls.Config { return c.tlsConfigFor(c.Addr) }

// tlsConfigFor returns the TLS client configuration for the server's
// address addr (its own, or its Inject address).
func (c ServerConfig) tlsConfigFor(addr string) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TLSConfig != nil {
		cfg = c.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	return cfg
}

// ParseServerURL parses a server given as a URL:
//
//	nntp://[user:pass@]host[:port][?priority=N&connections=N]
//	nntps://[user:pass@]host[:port][?priority=N&connections=N]
//
// nntp:// defaults to port 119 and STARTTLS when offered; nntps:// to port
// 563 and implicit TLS. A path, fragment or unknown parameter is refused so
// that a typo does not pass silently; errors never show the password.
func ParseServerURL(s string) (ServerConfig, error) {
	if !strings.Contains(s, "://") {
		return ServerConfig{}, fmt.Errorf("reader: server URL %q: no scheme: write it as nntp://%s (nntps:// for TLS)", s, s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return ServerConfig{}, fmt.Errorf("reader: server URL: %w", err)
	}
	// Errors show the URL without its password.
	s = u.Redacted()
	var c ServerConfig
	port := DefaultNNTPPort
	switch u.Scheme {
	case "nntp":
	case "nntps":
		c.TLS, port = TLSImplicit, DefaultNNTPSPort
	default:
		return ServerConfig{}, fmt.Errorf("reader: server URL %q: scheme must be nntp:// or nntps://", s)
	}
	if u.Hostname() == "" {
		return ServerConfig{}, fmt.Errorf("reader: server URL %q: no host", s)
	}
	if (u.Path != "" && u.Path != "/") || u.Fragment != "" || u.Opaque != "" {
		return ServerConfig{}, fmt.Errorf("reader: server URL %q: unexpected path or fragment", s)
	}
	if u.Port() != "" {
		port = u.Port()
	}
	c.Addr = net.JoinHostPort(u.Hostname(), port)
	if u.User != nil {
		c.User = u.User.Username()
		c.Pass, _ = u.User.Password()
		if c.User == "" {
			return ServerConfig{}, fmt.Errorf("reader: server URL %q: empty user name", s)
		}
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch strings.ToLower(k) {
		case "priority":
			n, err := strconv.Atoi(v)
			if err != nil {
				return ServerConfig{}, fmt.Errorf("reader: server URL %q: priority %q: not a number", s, v)
			}
			c.Priority = n
		case "connections":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				return ServerConfig{}, fmt.Errorf("reader: server URL %q: connections %q: want 1 to 1000", s, v)
			}
			c.Connections = n
		case "name":
			c.Name = v
		default:
			return ServerConfig{}, fmt.Errorf("reader: server URL %q: unknown parameter %q (want priority, connections or name)", s, k)
		}
	}
	return c, nil
}
