package tomlconf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The one grammar of durations and sizes for every newsflow program's
// configuration (newsfeed, newsget, newsweb) and command-line flags.
//
//	duration = go-duration | number "d"      "90s", "1h30m", "7d", "1.5d"
//	size     = integer                       a TOML integer: octets
//	         | number [" "] [unit] ["B" | "iB"]   "512K", "10MB", "1GiB", "1.5G", "2T"
//	unit     = "K" | "M" | "G" | "T"          powers of 1024, either case
//
// Neither may be negative. A size is at most MaxSize octets.

// Duration is a configuration duration: a string in Go syntax ("90s",
// "1h30m") or a number of days ("7d", "1.5d"). Negative durations are
// refused.
type Duration time.Duration

// ParseDuration parses a duration in the configuration grammar.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	bad := fmt.Errorf("bad duration %q (want e.g. \"90s\", \"2h\", \"7d\")", s)
	if n, ok := strings.CutSuffix(t, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		// strconv accepts "Inf", "NaN", hex and underscores; a day count is
		// a plain decimal number.
		if err != nil || !plainNumber(n) || days < 0 || days*float64(24*time.Hour) >= math.MaxInt64 {
			return 0, bad
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	v, err := time.ParseDuration(t)
	if err != nil || v < 0 {
		return 0, bad
	}
	return v, nil
}

// UnmarshalText parses a duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText formats the duration as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// String formats the duration so that ParseDuration reads it back exactly:
// whole days as "7d", anything else in Go syntax ("1h30m0s").
func (d Duration) String() string {
	const day = 24 * time.Hour
	if v := time.Duration(d); v > 0 && v%day == 0 {
		return strconv.FormatInt(int64(v/day), 10) + "d"
	}
	return time.Duration(d).String()
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Size is a number of octets: a TOML integer, or a string with a unit
// ("512K", "10MB", "1GiB", "1.5G", "2T"; K, M, G, T are powers of 1024).
type Size int64

// MaxSize is the largest Size the grammar accepts (4 EiB), far above any
// disk, so that sums of a few sizes cannot overflow.
const MaxSize = 1 << 62

// sizeUnits are the multipliers of the unit letters.
var sizeUnits = map[byte]int64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}

// ParseSize parses a size in the configuration grammar.
func ParseSize(s string) (Size, error) {
	bad := fmt.Errorf("bad size %q (want a number of bytes, or e.g. \"512K\", \"10MB\", \"1.5G\")", s)
	t := strings.ToUpper(strings.TrimSpace(s))
	if u, ok := strings.CutSuffix(t, "IB"); ok {
		t = u
	} else {
		t = strings.TrimSuffix(t, "B")
	}
	mult := int64(1)
	if n := len(t); n > 0 && sizeUnits[t[n-1]] != 0 {
		t, mult = t[:n-1], sizeUnits[t[n-1]]
	}
	t = strings.TrimSpace(t)
	if !plainNumber(t) {
		return 0, bad
	}
	// Integers are exact; only a fraction goes through a float.
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 || n > MaxSize/mult {
			return 0, bad
		}
		return Size(n * mult), nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f*float64(mult) > MaxSize {
		return 0, bad
	}
	return Size(f * float64(mult)), nil
}

// UnmarshalText parses a size string.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// String formats the size so that ParseSize reads it back exactly: the
// largest unit that divides it ("2T", "512K"), else octets ("1000").
func (s Size) String() string {
	for _, u := range []byte("TGMK") {
		if m := sizeUnits[u]; s != 0 && int64(s)%m == 0 {
			return strconv.FormatInt(int64(s)/m, 10) + string(u)
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

// plainNumber reports whether t is a decimal number with an optional
// fraction and exponent ("12", "1.5", "2e3"): what strconv accepts beyond
// that (signs aside, which the callers check) — "Inf", "NaN", hex and
// underscores — is no size or day count.
func plainNumber(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c >= '0' && c <= '9', c == '.', c == 'e', c == 'E', c == '+', c == '-':
		default:
			return false
		}
	}
	return true
}
