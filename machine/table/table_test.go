package table

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type light uint8

const (
	red light = iota
	green
	amber
)

func (l light) String() string { return [...]string{"red", "green", "amber"}[l] }

type signal uint8

const (
	onGo signal = iota
	onSlow
	onStop
)

func (s signal) String() string { return [...]string{"go", "slow", "stop"}[s] }

var rows = []Row[light, signal]{
	{red, onGo, green},
	{green, onSlow, amber},
	{amber, onStop, red},
	{green, onStop, red},
}

// TestNext takes every (state, event) pair: the rows lead where they say,
// every other pair has no row.
func TestNext(t *testing.T) {
	tb := Must[light, signal]("lights", rows)
	want := map[[2]uint8]light{}
	for _, r := range rows {
		want[[2]uint8{uint8(r.From), uint8(r.On)}] = r.To
	}
	for s := red; s <= amber; s++ {
		for e := onGo; e <= onStop; e++ {
			got, ok := tb.Next(s, e)
			w, wok := want[[2]uint8{uint8(s), uint8(e)}]
			if ok != wok || got != w {
				t.Errorf("Next(%s, %s) = %s, %t; want %s, %t", s, e, got, ok, w, wok)
			}
			r, rok := tb.Row(s, e)
			if rok != wok || (rok && r != (Row[light, signal]{s, e, w})) {
				t.Errorf("Row(%s, %s) = %v, %t", s, e, r, rok)
			}
		}
	}
	if diff := cmp.Diff(rows, tb.Rows()); diff != "" {
		t.Errorf("Rows (-want +got):\n%s", diff)
	}
	if _, ok := tb.Next(light(200), onGo); ok {
		t.Error("Next of a state beyond the table found a row")
	}
	if _, ok := tb.Next(red, signal(200)); ok {
		t.Error("Next of an event beyond the table found a row")
	}
	if tb.Name() != "lights" {
		t.Errorf("Name = %q", tb.Name())
	}
	if got := rows[0].String(); got != "red --go--> green" {
		t.Errorf("row text %q", got)
	}
}

// TestDuplicateRow: a second row for a (state, event) pair is caught when
// the table is built, even when it leads to the same state.
func TestDuplicateRow(t *testing.T) {
	for _, dup := range []Row[light, signal]{{green, onSlow, red}, {green, onSlow, amber}} {
		_, err := New("lights", append(append([]Row[light, signal]{}, rows...), dup)...)
		want := fmt.Sprintf("lights: table has two rows for green/slow (to amber and to %s)", dup.To)
		if err == nil || err.Error() != want {
			t.Errorf("New with %v: %v, want %q", dup, err, want)
		}
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("Must with %v did not panic", dup)
				}
			}()
			Must[light, signal]("lights", append(append([]Row[light, signal]{}, rows...), dup))
		}()
	}
}

func TestTransitionError(t *testing.T) {
	var err error = Illegal("queue peer", "conn 3", red, onStop)
	if got, want := err.Error(), "queue peer: conn 3 in state red: illegal event stop"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	var te *TransitionError
	if !errors.As(err, &te) || te.State != red || te.Event != onStop {
		t.Errorf("errors.As: %+v", te)
	}
}
