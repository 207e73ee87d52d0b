package download

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"
	_ "time/tzdata" // the DST cases need zone data on every host

	"github.com/google/go-cmp/cmp"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestQuota runs scripts of Add and Reached against quotas in a time zone;
// each step gives the local wall time, the bytes added, and what Used and
// Reached must say afterwards.
func TestQuota(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	type step struct {
		at      string // local time "2006-01-02 15:04" in the quota's zone
		add     int64
		day     int64 // Used: today
		period  int64 // Used: this period
		reached QuotaKind
	}
	for _, tc := range []struct {
		name  string
		q     Quota
		steps []step
	}{{
		name: "no quota: counts, never reached",
		q:    Quota{},
		steps: []step{
			{"2024-01-01 10:00", 1 << 40, 1 << 40, 1 << 40, QuotaNone},
		},
	}, {
		name: "daily: reached at the limit, reset at local midnight",
		q:    Quota{Daily: 1000, Loc: berlin},
		steps: []step{
			{"2024-05-10 09:00", 600, 600, 600, QuotaNone},
			{"2024-05-10 23:59", 400, 1000, 1000, QuotaDaily},
			{"2024-05-11 00:00", 0, 0, 1000, QuotaNone},
			{"2024-05-11 00:01", 999, 999, 1999, QuotaNone},
		},
	}, {
		name: "daily across spring-forward: a 23-hour day is still one day",
		q:    Quota{Daily: 1000, Loc: berlin},
		steps: []step{
			{"2024-03-31 00:30", 500, 500, 500, QuotaNone},
			{"2024-03-31 03:30", 500, 1000, 1000, QuotaDaily}, // 2:00-3:00 does not exist
			{"2024-03-31 23:59", 0, 1000, 1000, QuotaDaily},
			{"2024-04-01 00:00", 0, 0, 0, QuotaNone}, // and a new month
		},
	}, {
		name: "daily across fall-back: a 25-hour day is still one day",
		q:    Quota{Daily: 1000, Loc: berlin},
		steps: []step{
			{"2024-10-27 00:30", 1000, 1000, 1000, QuotaDaily},
			{"2024-10-27 23:30", 0, 1000, 1000, QuotaDaily}, // 24 hours after 00:30, still the 27th
			{"2024-10-28 00:00", 0, 0, 1000, QuotaNone},
		},
	}, {
		name: "monthly with quota_day 15: the period runs from the 15th to the 14th",
		q:    Quota{Monthly: 1000, QuotaDay: 15, Loc: berlin},
		steps: []step{
			{"2024-01-20 12:00", 700, 700, 700, QuotaNone},
			{"2024-02-14 23:59", 300, 300, 1000, QuotaMonthly},
			{"2024-02-15 00:00", 0, 0, 0, QuotaNone},
			{"2024-02-15 00:00", 10, 10, 10, QuotaNone},
		},
	}, {
		name: "monthly at the year boundary",
		q:    Quota{Monthly: 1000, QuotaDay: 1},
		steps: []step{
			{"2024-12-31 23:59", 1000, 1000, 1000, QuotaMonthly},
			{"2025-01-01 00:00", 0, 0, 0, QuotaNone},
		},
	}, {
		name: "quota_day 31 in short months means the last day",
		q:    Quota{Monthly: 1000, QuotaDay: 31},
		steps: []step{
			{"2024-01-31 08:00", 1000, 1000, 1000, QuotaMonthly},
			{"2024-02-28 08:00", 0, 0, 1000, QuotaMonthly}, // leap year: the period starts on the 29th
			{"2024-02-29 00:00", 0, 0, 0, QuotaNone},
			{"2024-03-30 08:00", 500, 500, 500, QuotaNone},
			{"2024-03-31 00:00", 0, 0, 0, QuotaNone},
			{"2024-04-30 00:00", 0, 0, 0, QuotaNone}, // April's last day
		},
	}, {
		name: "both reached: the monthly one is named",
		q:    Quota{Daily: 100, Monthly: 150},
		steps: []step{
			{"2024-06-01 10:00", 100, 100, 100, QuotaDaily},
			{"2024-06-02 10:00", 60, 60, 160, QuotaMonthly},
			{"2024-06-03 10:00", 0, 0, 160, QuotaMonthly},
		},
	}, {
		name: "a clock that goes back keeps counting into the newer day",
		q:    Quota{Daily: 1000},
		steps: []step{
			{"2024-06-02 10:00", 600, 600, 600, QuotaNone},
			{"2024-06-01 23:00", 400, 1000, 1000, QuotaDaily},
			{"2024-06-02 10:01", 0, 1000, 1000, QuotaDaily},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			loc := q.Loc
			if loc == nil {
				loc = time.UTC
			}
			type result struct {
				Day, Period int64
				Reached     QuotaKind
			}
			var got, want []result
			for _, s := range tc.steps {
				now, err := time.ParseInLocation("2006-01-02 15:04", s.at, loc)
				if err != nil {
					t.Fatal(err)
				}
				if s.add > 0 {
					q.Add(now, s.add)
				}
				d, p := q.Used(now)
				_, k := q.Reached(now)
				got = append(got, result{d, p, k})
				want = append(want, result{s.day, s.period, s.reached})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestQuotaResetAt checks when quotas start afresh, across DST and short
// months.
func TestQuotaResetAt(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, berlin)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		q    Quota
		now  string
		kind QuotaKind
		want string // RFC 3339
	}{
		{Quota{Loc: berlin}, "2024-03-30 12:00", QuotaDaily, "2024-03-31T00:00:00+01:00"},
		{Quota{Loc: berlin}, "2024-03-31 12:00", QuotaDaily, "2024-04-01T00:00:00+02:00"},
		{Quota{Loc: berlin, QuotaDay: 15}, "2024-02-14 23:59", QuotaMonthly, "2024-02-15T00:00:00+01:00"},
		{Quota{Loc: berlin, QuotaDay: 15}, "2024-02-15 00:00", QuotaMonthly, "2024-03-15T00:00:00+01:00"},
		{Quota{Loc: berlin, QuotaDay: 31}, "2024-01-31 10:00", QuotaMonthly, "2024-02-29T00:00:00+01:00"},
		{Quota{Loc: berlin}, "2024-12-05 10:00", QuotaMonthly, "2025-01-01T00:00:00+01:00"},
	} {
		got := tc.q.ResetAt(at(tc.now), tc.kind).Format(time.RFC3339)
		if got != tc.want {
			t.Errorf("QuotaDay %d at %s, %v: got %s, want %s", tc.q.QuotaDay, tc.now, tc.kind, got, tc.want)
		}
	}
}

// TestQuotaLeft checks the bytes left before the nearest quota.
func TestQuotaLeft(t *testing.T) {
	now := epoch
	for _, tc := range []struct {
		q    Quota
		add  int64
		left int64
		ok   bool
	}{
		{Quota{}, 500, 0, false},
		{Quota{Daily: 1000}, 300, 700, true},
		{Quota{Monthly: 1000}, 300, 700, true},
		{Quota{Daily: 1000, Monthly: 500}, 300, 200, true},
		{Quota{Daily: 100, Monthly: 5000}, 300, 0, true},
	} {
		q := tc.q
		q.Add(now, tc.add)
		left, ok := q.Left(now)
		if left != tc.left || ok != tc.ok {
			t.Errorf("%+v after %d: Left = %d, %v; want %d, %v", tc.q, tc.add, left, ok, tc.left, tc.ok)
		}
	}
}

// TestQuotaState checks that the state survives JSON, as the runtime
// persists it, and that bad states are refused.
func TestQuotaState(t *testing.T) {
	q := Quota{Daily: 1000, Monthly: 5000, QuotaDay: 10}
	now := time.Date(2024, 7, 9, 12, 0, 0, 0, time.UTC)
	q.Add(now, 1234)
	data, err := json.Marshal(q.State())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"day":"2024-07-09","day_bytes":1234,"period_start":"2024-06-10","period_bytes":1234}`; string(data) != want {
		t.Errorf("JSON: got %s, want %s", data, want)
	}
	st, err := ParseQuotaState(data)
	if err != nil {
		t.Fatal(err)
	}
	r := Quota{Daily: 1000, Monthly: 5000, QuotaDay: 10}
	if err := r.Restore(st); err != nil {
		t.Fatal(err)
	}
	r.Add(now, 1)
	if d, p := r.Used(now); d != 1235 || p != 1235 {
		t.Errorf("after restore: used %d, %d; want 1235, 1235", d, p)
	}
	for _, bad := range []string{
		`{"day":"2024-13-01","day_bytes":1}`,
		`{"day":"2024-7-9","day_bytes":1}`,
		`{"day":"2024-07-09","day_bytes":-1}`,
		`{"period_start":"","period_bytes":5}`,
		`{"day":"yesterday"}`,
		`[1,2]`,
		`{"day":`,
	} {
		if _, err := ParseQuotaState([]byte(bad)); err == nil {
			t.Errorf("ParseQuotaState(%s) accepted", bad)
		}
		if err := r.Restore(QuotaState{Day: "x"}); err == nil {
			t.Error("Restore of a bad state accepted")
		}
	}
	if _, err := ParseQuotaState([]byte(`{}`)); err != nil {
		t.Errorf("the empty state: %v", err)
	}
}

// FuzzQuotaState: ParseQuotaState never panics, and a state it accepts
// marshals and parses back to itself and works in a Quota.
func FuzzQuotaState(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/fuzz/FuzzQuotaState/*")
	if len(seeds) == 0 {
		f.Fatal("no seed corpus files in testdata/fuzz/FuzzQuotaState")
	}
	f.Add([]byte(`{"day":"2024-07-09","day_bytes":1234,"period_start":"2024-06-10","period_bytes":1234}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"day":"2024-02-30","day_bytes":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseQuotaState(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseQuotaState(out)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if back != st {
			t.Fatalf("round trip: %+v != %+v", back, st)
		}
		q := Quota{Daily: 10, Monthly: 100}
		if err := q.Restore(st); err != nil {
			t.Fatal(err)
		}
		q.Add(epoch, 5)
		if d, _ := q.Used(epoch); d < 5 {
			t.Fatalf("Used after Add: %d", d)
		}
	})
}
