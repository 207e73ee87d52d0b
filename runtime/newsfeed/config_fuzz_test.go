package newsfeed

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParseConfig: any input either parses into a configuration that
// passes its own checks, or fails with errors that each name the file (and
// never panics). A configuration that parsed prints (Format) as text that
// parses to the same configuration.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("listen = \"127.0.0.1:1119\"\nspool = \"/s\"\npathhost = \"relay.example\"\n[[peer]]\nname = \"inn1\"\nhost = \"127.0.0.1\"\ngroups = [\"*\", \"!control.*\", \"@alt.binaries.*\"]\nmax_size = \"1MB\"\n"))
	f.Add([]byte("spool = \"/s\"\nstats_interval = \"2d\"\n[[peer]]\nname = \"a\"\nhost = \"h\"\ntls = true\ntls_verify = false\nwindow = 0\n"))
	f.Add([]byte("spool = \"/s\"\n[peer]\nname = 1\n"))
	f.Add([]byte("a.b.c = 1\n[x.y]\nz = [1, \"2\"]\n"))
	f.Add([]byte("listen = \"\"\n"))
	f.Add(DefaultConfigText)
	f.Fuzz(func(t *testing.T, text []byte) {
		t.Setenv("XDG_STATE_HOME", "/state")
		c, err := ParseConfig("fuzz.toml", text)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "fuzz.toml") {
					t.Fatalf("error line %q does not name the file (whole error %q)", line, err)
				}
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *ConfigError", err, err)
			}
			return
		}
		if err := c.check(); err != nil {
			t.Fatalf("parsed configuration fails its own check: %v", err)
		}
		for i, p := range c.Peers {
			if p.Name == "" || p.Host == "" || p.Window < 1 || p.Connections < 1 || p.TLSVerify == nil {
				t.Fatalf("peer %d not filled in: %+v", i, p)
			}
		}
		printed := c.Format()
		c2, err := ParseConfig("fuzz.toml", printed)
		if err != nil {
			t.Fatalf("the printed configuration does not parse: %v\n%s", err, printed)
		}
		opts := cmp.Options{cmpopts.IgnoreUnexported(Config{}, IncomingConfig{}), cmpopts.EquateEmpty(), cmpopts.EquateNaNs()}
		if d := cmp.Diff(c, c2, opts); d != "" {
			t.Fatalf("printed and read back differs (-parsed +printed):\n%s\n%s", d, printed)
		}
	})
}
