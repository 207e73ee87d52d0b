package newsfeed

import (
	"fmt"

	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// Format writes the configuration as TOML with every key and its value,
// defaults filled in, that ParseConfig reads back to the same
// configuration (what `newsfeed config` prints): top-level keys first,
// then [[incoming]], [[peer]] and [cluster] tables in the order of the
// Config type (tomlconf.AppendTOML).
func (c *Config) Format() []byte {
	b := fmt.Appendf(nil, "# newsfeed configuration from %s, every default filled in\n", c.Source)
	return tomlconf.AppendTOML(b, c)
}
