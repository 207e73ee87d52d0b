package handshake

import "github.com/newsflow/newsflow/proto"

// parseCaps parses the lines of a capability list (RFC 3977 §5.2) with
// proto.ParseCapabilities. A line that is not a valid capability (RFC 3977
// §9.8) is skipped rather than failing the connection: a server's odd
// extension must not stop a client that does not use it.
func parseCaps(lines []string) proto.CapabilitySet {
	valid := lines[:0:0]
	for _, l := range lines {
		if _, err := proto.ParseCapabilities([]string{l}); err == nil {
			valid = append(valid, l)
		}
	}
	set, _ := proto.ParseCapabilities(valid)
	return set
}
