package newsfeed

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzParseAllow: an allow entry parses into a masked prefix that prints
// and parses back to itself and contains its own address, or fails; a
// plain address is taken exactly when net/netip takes it (without zone).
func FuzzParseAllow(f *testing.F) {
	for _, s := range []string{"127.0.0.0/8", "::1", "192.0.2.7", "2001:db8::/32", "::ffff:192.0.2.7",
		"192.0.2.1/24", "10.0.0.0/33", "localhost", "fe80::1%eth0", " 127.0.0.1 ", "", "0.0.0.0/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseAllow(s)
		if !strings.Contains(s, "/") {
			a, aerr := netip.ParseAddr(strings.TrimSpace(s))
			if want := aerr == nil && a.Zone() == ""; want != (err == nil) {
				t.Fatalf("parseAllow(%q) error %v; netip.ParseAddr %v", s, err, aerr)
			}
		}
		if err != nil {
			return
		}
		if p != p.Masked() || !p.Contains(p.Addr()) {
			t.Fatalf("parseAllow(%q) = %s: not masked or not containing its address", s, p)
		}
		back, err := parseAllow(p.String())
		if err != nil || back != p {
			t.Fatalf("parseAllow(%q) = %s, which parses back to %s, %v", s, p, back, err)
		}
	})
}
