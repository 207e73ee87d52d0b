package tomlconf

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestParseDuration: the grammar is the union of the three programs' old
// ones (Go syntax everywhere, days in newsfeed), minus nonsense strconv
// would let through.
func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		// Go syntax: what newsfeed, newsget and newsweb all accepted.
		{"90s", 90 * time.Second, true},
		{"1h30m", 90 * time.Minute, true},
		{"250ms", 250 * time.Millisecond, true},
		{"0", 0, true},
		{"0s", 0, true},
		// Days: newsfeed's, now everywhere.
		{"7d", 7 * 24 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{" 2d ", 48 * time.Hour, true},
		{"0d", 0, true},
		// Refused.
		{"-1s", 0, false},
		{"-1d", 0, false},
		{"soon", 0, false},
		{"", 0, false},
		{"d", 0, false},
		{"Infd", 0, false},   // strconv reads "Inf"; a day count is decimal
		{"NaNd", 0, false},   // the old newsfeed grammar let this through
		{"1e300d", 0, false}, // beyond time.Duration
		{"1E10d", 0, false},  // the old newsfeed grammar read it as a negative duration (FuzzOldGrammars)
		{"0x10d", 0, false},
	} {
		got, err := ParseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestParseSize: the union of newsfeed's ("10MB", "1GiB", "512 K") and
// newsget's ("1.5G", "2T", "20m") grammars.
func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Size
		ok   bool
	}{
		{"0", 0, true},
		{"1000", 1000, true},
		{"512B", 512, true},
		// newsfeed's
		{"512K", 512 << 10, true},
		{"10MB", 10 << 20, true},
		{"1GiB", 1 << 30, true},
		{"1gib", 1 << 30, true},
		{"512 K", 512 << 10, true},
		{"10 MB", 10 << 20, true},
		{"4611686018427387904", 1 << 62, true}, // exact: no float on the way
		// newsget's
		{"20m", 20 << 20, true},
		{"1.5G", 3 << 29, true},
		{"2T", 2 << 40, true},
		{"1TiB", 1 << 40, true},
		{"1e3", 1000, true},
		{"0.5K", 512, true},
		// Refused.
		{"", 0, false},
		{"K", 0, false},
		{"lots", 0, false},
		{"-1", 0, false},
		{"-1K", 0, false},
		{"4611686018427387905", 0, false}, // above MaxSize
		{"4194304T", 1 << 62, true},
		{"4194305T", 0, false},
		{"NaN", 0, false}, // the old newsget grammar let this through
		{"Inf", 0, false},
		{"0x10", 0, false},
		{"1_000", 0, false},
		{"1P", 0, false},
		{"1 G B", 0, false},
		{"0BIB", 0, false}, // the old newsget grammar trimmed "IB" and then "B" (FuzzOldGrammars)
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v, ok %v", tc.in, int64(got), err, int64(tc.want), tc.ok)
		}
	}
}

// TestUnitsFormat: String writes what a user would, and it reads back.
func TestUnitsFormat(t *testing.T) {
	got := []string{
		Duration(7 * 24 * time.Hour).String(), Duration(90 * time.Second).String(), Duration(36 * time.Hour).String(), Duration(0).String(),
		Size(0).String(), Size(1000).String(), Size(512 << 10).String(), Size(3 << 29).String(), Size(2 << 40).String(),
	}
	want := []string{"7d", "1m30s", "36h0m0s", "0s", "0", "1000", "512K", "1536M", "2T"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("formats (-want +got):\n%s", d)
	}
}

// TestUnitsDecode: the types decode from TOML strings (and a size from an
// integer), and a refused value is located.
func TestUnitsDecode(t *testing.T) {
	var c struct {
		Age  Duration `toml:"age"`
		Max  Size     `toml:"max"`
		Rate Size     `toml:"rate"`
	}
	if _, err := Decode("f.toml", []byte("age = \"7d\"\nmax = 1024\nrate = \"1.5M\"\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.Age.D() != 7*24*time.Hour || c.Max != 1024 || c.Rate != 3<<19 {
		t.Errorf("decoded %v %d %d", c.Age, c.Max, c.Rate)
	}
	_, err := Decode("f.toml", []byte("age = \"7d\"\nrate = \"fast\"\n"), &c)
	want := `f.toml:2: rate: bad size "fast" (want a number of bytes, or e.g. "512K", "10MB", "1.5G")`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// FuzzParseDuration: whatever parses is non-negative and formats to a
// string that parses back to the same duration.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90s", "7d", "1.5d", "1h30m", "0", "-1s", "NaNd", "1e300d", "2562047h47m16.854775807s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		back, err := ParseDuration(Duration(d).String())
		if err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %v; its String %q reads back as %v, %v", s, d, Duration(d).String(), back, err)
		}
	})
}

// FuzzParseSize: whatever parses is within [0, MaxSize] and formats to a
// string that parses back to the same size; every size in range formats
// and parses back.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"512K", "10MB", "1GiB", "1.5G", "2T", "1000", "512 K", "NaN", "4611686018427387904", "1e3"} {
		f.Add(s, int64(0))
	}
	f.Add("", int64(1)<<40)
	f.Add("", int64(MaxSize))
	f.Fuzz(func(t *testing.T, s string, n int64) {
		if n >= 0 && n <= MaxSize {
			back, err := ParseSize(Size(n).String())
			if err != nil || back != Size(n) {
				t.Fatalf("Size(%d).String() = %q reads back as %d, %v", n, Size(n).String(), back, err)
			}
		}
		v, err := ParseSize(s)
		if err != nil {
			return
		}
		if v < 0 || v > MaxSize {
			t.Fatalf("ParseSize(%q) = %d, out of range", s, v)
		}
		back, err := ParseSize(v.String())
		if err != nil || back != v {
			t.Fatalf("ParseSize(%q) = %d; its String %q reads back as %d, %v", s, v, v.String(), back, err)
		}
	})
}

// The grammars Duration and Size replaced, as they were (newsfeed's
// Duration and Size, newsget's ParseSize; newsget's and newsweb's
// durations were time.ParseDuration, a subset of newsfeed's), kept as
// references: what they accepted, the new grammar accepts with the same
// value — but for the nonsense they let through (NaN, Inf, hex floats) and
// integers past 2^53, which newsget read through a float and rounded.

func oldFeedDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil || days < 0 {
			return 0, false
		}
		if days*float64(24*time.Hour) >= math.MaxInt64 {
			return 0, false // it overflowed: "1e10d" read as a negative duration
		}
		return time.Duration(days * float64(24*time.Hour)), true
	}
	v, err := time.ParseDuration(s)
	return v, err == nil && v >= 0
}

func oldFeedSize(b string) (Size, bool) {
	t := strings.ToUpper(strings.TrimSpace(b))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, false
	}
	return Size(n * mult), true
}

func oldGetSize(t string) (Size, bool) {
	t = strings.TrimSpace(t)
	u := strings.ToUpper(t)
	u = strings.TrimSuffix(strings.TrimSuffix(u, "IB"), "B")
	mult := 1.0
	if n := len(u); n > 0 {
		switch u[n-1] {
		case 'K':
			mult, u = 1<<10, u[:n-1]
		case 'M':
			mult, u = 1<<20, u[:n-1]
		case 'G':
			mult, u = 1<<30, u[:n-1]
		case 'T':
			mult, u = 1<<40, u[:n-1]
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(u), 64)
	if err != nil || f < 0 || f*mult > 1<<62 {
		return 0, false
	}
	return Size(f * mult), true
}

// nonsense is what the old grammars wrongly took for a number ("NaN",
// "Inf", hex floats) or a unit (newsget's "0BIB": "IB" and then "B"
// trimmed).
func nonsense(s string) bool {
	u := strings.ToUpper(s)
	return strings.Contains(u, "NAN") || strings.Contains(u, "INF") || strings.Contains(u, "X") || strings.Contains(u, "_") ||
		strings.HasSuffix(strings.TrimSpace(u), "BIB")
}

// FuzzOldGrammars: the unified grammar accepts what each old one did, with
// the same value.
func FuzzOldGrammars(f *testing.F) {
	for _, s := range []string{"90s", "7d", "1.5d", "512K", "10MB", "1GiB", "1.5G", "2T", "512 K", "20m", "1e3", "0.5K", "1iB", "NaN", "0x1p3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if nonsense(s) {
			return
		}
		if old, ok := oldFeedDuration(s); ok {
			if got, err := ParseDuration(s); err != nil || got != old {
				t.Fatalf("newsfeed read duration %q as %v; now %v, %v", s, old, got, err)
			}
		}
		if old, ok := oldFeedSize(s); ok {
			if got, err := ParseSize(s); err != nil || got != old {
				t.Fatalf("newsfeed read size %q as %d; now %d, %v", s, old, got, err)
			}
		}
		if old, ok := oldGetSize(s); ok && old < 1<<53 {
			if got, err := ParseSize(s); err != nil || got != old {
				t.Fatalf("newsget read size %q as %d; now %d, %v", s, old, got, err)
			}
		}
	})
}

// TestUnitKinds: a size takes a string or an integer, a duration a string;
// any other kind is a mistake at its line, never a value made up from it.
func TestUnitKinds(t *testing.T) {
	type conf struct {
		Q    Size     `toml:"q"`
		D    Duration `toml:"d"`
		Peer []struct {
			D Duration `toml:"d"`
		} `toml:"peer"`
	}
	tests := []struct{ text, err string }{
		{`q = 5`, ""},
		{`q = "5M"`, ""},
		{`d = "5s"`, ""},
		{`q = true`, `f:1: q: wrong type of value: want a size string (e.g. "512K", "10MB") or an integer, found true or false`},
		{`q = 1.5`, `f:1: q: wrong type of value: want a size string (e.g. "512K", "10MB") or an integer, found a number with a fraction`},
		{"\nd = 5", `f:2: d: wrong type of value: want a duration string (e.g. "90s", "1h30m", "7d"), found an integer`},
		{"[[peer]]\nd = \"1s\"\n[[peer]]\nd = 2", `f:4: peer[2].d: wrong type of value: want a duration string (e.g. "90s", "1h30m", "7d"), found an integer`},
	}
	for _, tc := range tests {
		var c conf
		keys, err := Decode("f", []byte(tc.text), &c)
		if keys != nil {
			keys.Number(err)
		}
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("%q: error %q, want %q", tc.text, got, tc.err)
		}
	}
}
