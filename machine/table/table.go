// Package table holds what newsflow's lifecycle tables share: a table of rows
// "in state From, event On leads to To" over a subject's own state type and
// event type, built once at start with a check that no (state, event) pair
// has two rows, looked up in constant time, and the error an input the table
// does not allow comes back as.
//
// Each subject (a queued article, a connection, a replay file, a journal
// file, a download job's entry) gets its own state type, so a row that mixes
// subjects ({ConnDown, OnConnUp, Queued}) does not compile. The rules that
// justify the rows are written at the top of the table, in the package that
// owns the lifecycle; this package knows nothing about any of them.
package table

import "fmt"

// State is a subject's state: a small integer with a name for errors.
type State interface {
	~uint8
	fmt.Stringer
}

// Event is what moves a state: an input, or a decision a machine takes on
// one.
type Event interface {
	~uint8
	fmt.Stringer
}

// Row is one transition: in state From, event On leads to To.
type Row[S State, E Event] struct {
	From S
	On   E
	To   S
}

// String writes the row as "from --on--> to".
func (r Row[S, E]) String() string { return fmt.Sprintf("%s --%s--> %s", r.From, r.On, r.To) }

// Table is a lifecycle's transitions. Build it once, at package start, with
// Must; it is read-only afterwards and safe for concurrent use.
type Table[S State, E Event] struct {
	name   string
	rows   []Row[S, E]
	stride int     // events per state in next
	next   []uint8 // next[from*stride+on] is To+1, or 0 when there is no row
}

// New builds the table name (used in errors) from rows. Two rows for the
// same state and event are an error naming the lifecycle, the state and the
// event: the table would be ambiguous.
func New[S State, E Event](name string, rows ...Row[S, E]) (*Table[S, E], error) {
	// A dense array, not a map: the queue looks a row up for every article
	// it moves.
	states, events := 0, 0
	for _, r := range rows {
		states = max(states, int(r.From)+1, int(r.To)+1)
		events = max(events, int(r.On)+1)
	}
	t := &Table[S, E]{name: name, rows: rows, stride: events, next: make([]uint8, states*events)}
	for _, r := range rows {
		if r.To == 255 {
			return nil, fmt.Errorf("%s: state %s is out of range", name, r.To)
		}
		i := int(r.From)*events + int(r.On)
		if to := t.next[i]; to != 0 {
			return nil, fmt.Errorf("%s: table has two rows for %s/%s (to %s and to %s)", name, r.From, r.On, S(to-1), r.To)
		}
		t.next[i] = uint8(r.To) + 1
	}
	return t, nil
}

// Must is New for a table built at package start: a duplicate row is a bug
// in the program, so it panics, and every test of the package catches it.
//
// The rows may be of the owner's own type defined as a Row (type rule
// table.Row[State, Event]), so that the table reads as plain rows
// {From, On, To} without field names (go vet wants names in a literal of
// another package's struct type).
func Must[S State, E Event, R ~struct {
	From S
	On   E
	To   S
}](name string, rows []R) *Table[S, E] {
	rs := make([]Row[S, E], len(rows))
	for i, r := range rows {
		rs[i] = Row[S, E](r)
	}
	t, err := New(name, rs...)
	if err != nil {
		panic(err)
	}
	return t
}

// Next returns the state event on leads to from state from; false means the
// table has no such row.
func (t *Table[S, E]) Next(from S, on E) (S, bool) {
	if int(on) >= t.stride {
		return 0, false
	}
	if i := int(from)*t.stride + int(on); i < len(t.next) && t.next[i] != 0 {
		return S(t.next[i] - 1), true
	}
	return 0, false
}

// Row returns the row from/on, for a trace of the transitions taken.
func (t *Table[S, E]) Row(from S, on E) (Row[S, E], bool) {
	to, ok := t.Next(from, on)
	return Row[S, E]{From: from, On: on, To: to}, ok
}

// Rows returns the table's rows in the order written, for tests that take
// every row. The caller must not change them.
func (t *Table[S, E]) Rows() []Row[S, E] { return t.rows }

// Name returns the lifecycle's name.
func (t *Table[S, E]) Name() string { return t.name }

// TransitionError is an input a lifecycle table does not allow: Subject was
// in State when Event came. Its text is "<machine>: <subject> in state
// <state>: illegal event <event>", e.g. "queue peer: conn 3 in state down:
// illegal event accepted".
type TransitionError struct {
	Machine string       // who refused: "queue <peer>", "jobs"
	Subject string       // what refused: "conn 2", "replay file", "entry j1_d1"
	State   fmt.Stringer // the subject's state, of its own state type
	Event   fmt.Stringer // the event refused, of the table's event type
}

// Error names the machine, the subject, its state and the refused event.
func (e *TransitionError) Error() string {
	return fmt.Sprintf("%s: %s in state %s: illegal event %s", e.Machine, e.Subject, e.State, e.Event)
}

// Illegal returns the *TransitionError for event on, refused by subject of
// machine in state from. It is a function so that callers need not spell
// the field names at every refusal.
func Illegal[S State, E Event](machine, subject string, from S, on E) *TransitionError {
	return &TransitionError{Machine: machine, Subject: subject, State: from, Event: on}
}
