package download

// Theory of operation
//
// Limiter is the speed limit over all connections (the configuration's
// rate): a token bucket holding up to Burst bytes,
// refilled at Rate bytes per second. The owner calls Take after each read
// with the bytes read; Take removes them from the bucket, which may go into
// debt, and returns how long to wait before reading again: the time the
// refill needs to pay the debt. Taking after the read, not before, means no
// read is ever split or delayed to guess its size, and over any interval
// the bytes read exceed Rate*interval by at most Burst plus one read. The
// bucket starts empty, so from the start the excess is at most one read;
// only time spent idle later saves up a burst, by default a tenth of a
// second's worth: a limit holds within a few percent over any window of
// seconds, idle time before it or not.
//
// Arithmetic is in integers: the bucket counts nano-bytes (bytes x 1e9),
// so that refilling for d nanoseconds adds exactly d*Rate of them and
// waits come out exact to the nanosecond, with no drift over millions of
// reads. Time is an input; a clock that goes back refills nothing.

import "time"

// maxBurst bounds Burst so that nano-byte counts stay far from overflow.
const maxBurst = 1 << 32

// Limiter is a token bucket. Set Rate (and optionally Burst) and call Take;
// the zero value does not limit. It is not safe for concurrent use: an
// owner shared by several connections serialises the calls.
type Limiter struct {
	Rate  int64 // bytes per second; 0 (or less) = unlimited
	Burst int64 // bucket size in bytes; Rate/10 (a tenth of a second's worth) when 0

	credit  int64 // nano-bytes available; negative while in debt
	last    time.Time
	started bool
}

// burst is the bucket size in bytes.
func (l *Limiter) burst() int64 {
	b := l.Burst
	if b <= 0 {
		b = max(l.Rate/10, 1)
	}
	return min(b, maxBurst)
}

// refill brings the bucket up to now.
func (l *Limiter) refill(now time.Time) {
	if !l.started {
		l.started, l.last = true, now
		// The bucket starts empty: a full one would let a download run
		// a whole burst over the rate in its first seconds. Idle time
		// fills it, up to Burst.
		l.credit = 0
		return
	}
	d := now.Sub(l.last)
	if d <= 0 {
		return
	}
	l.last = now
	full := l.burst() * 1e9
	room := full - l.credit // > 0 unless full; debt makes it larger
	if room <= 0 {
		l.credit = full
		return
	}
	// Refill d*Rate nano-bytes, but no more than the room, without
	// overflowing d*Rate.
	if int64(d) >= room/l.Rate+1 {
		l.credit = full
		return
	}
	l.credit += int64(d) * l.Rate
	if l.credit > full {
		l.credit = full
	}
}

// Take removes n bytes from the bucket at now and returns how long the
// owner must wait before the next read: zero while the bucket holds
// enough. With no Rate it always returns zero.
func (l *Limiter) Take(now time.Time, n int64) time.Duration {
	if l.Rate <= 0 {
		return 0
	}
	l.refill(now)
	if n > 0 {
		// Debt is bounded so that the arithmetic cannot overflow; a debt
		// that large already means a wait of years.
		const maxDebt = -(1 << 62)
		if n > (l.credit-maxDebt)/1e9 {
			l.credit = maxDebt
		} else {
			l.credit -= n * 1e9
		}
	}
	if l.credit >= 0 {
		return 0
	}
	return time.Duration((-l.credit + l.Rate - 1) / l.Rate) // ceil(debt / Rate) nanoseconds
}

// SetRate changes the rate at now: the bucket is brought up to date at the
// old rate first. A rate of 0 removes the limit.
func (l *Limiter) SetRate(now time.Time, rate int64) {
	if l.Rate > 0 {
		l.refill(now)
	}
	l.Rate = rate
	if full := l.burst() * 1e9; l.credit > full {
		l.credit = full
	}
}
