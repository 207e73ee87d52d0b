package newsweb

import (
	"strconv"
	"strings"
	"testing"
)

// acceptsGzipSlow is the plain reading of Accept-Encoding that acceptsGzip
// walks in place: split on commas, the first gzip or * decides by its q.
func acceptsGzipSlow(v string) bool {
	for _, part := range strings.Split(v, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.TrimSpace(name)
		if !strings.EqualFold(name, "gzip") && name != "*" {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
					q = f
				}
			}
		}
		return q > 0
	}
	return false
}

// FuzzAcceptsGzip: acceptsGzip agrees with the split-based reading on
// every value.
func FuzzAcceptsGzip(f *testing.F) {
	for _, v := range []string{"", "gzip", "gzip, deflate, br, zstd", "GZIP ; q=0.5", "deflate, br", "*", "gzip;q=0",
		"identity, gzip;q=0.001", "gzip;q=0.0", "br;q=1, gzip;q=0.8", ",,gzip;;q=1;", "*;q=0, gzip", "gzip;q=NaN", " gzip ;level=1; q = 0 "} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := acceptsGzip(v), acceptsGzipSlow(v); got != want {
			t.Errorf("acceptsGzip(%q) = %v, the split-based reading says %v", v, got, want)
		}
	})
}

// Reading Accept-Encoding on a view allocates nothing.
func TestAcceptsGzipAllocs(t *testing.T) {
	for _, v := range []string{"gzip", "gzip, deflate, br, zstd", "br;q=1, gzip;q=0.8"} {
		if n := testing.AllocsPerRun(100, func() { acceptsGzip(v) }); n != 0 {
			t.Errorf("acceptsGzip(%q): %v allocations", v, n)
		}
	}
}
