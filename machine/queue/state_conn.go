package queue

import "github.com/newsflow/newsflow/machine/table"

// The lifecycle of a CONNECTION to the peer, in one table: it is Down (never
// seen, or gone) or Up. ConnUp and ConnDown move it; Shutdown takes every up
// connection down, after writing what it had in flight to .B.
var connTable = table.Must("queue connection", []rule[ConnState]{
	{ConnDown, OnConnUp, ConnUp},
	{ConnUp, OnConnDown, ConnDown},
	{ConnUp, OnShutdown, ConnDown},
})

// ConnState is where a connection is.
type ConnState uint8

// Connection states.
const (
	ConnDown ConnState = iota
	ConnUp
)

// String returns the state's name as used in errors.
func (s ConnState) String() string { return name(s, "down", "up") }
