package jobs

import "fmt"

// Places is a set of the directories that hold links to entries.
type Places uint8

// The link directories of the queue: queue/, inflight/, cleanup/.
const (
	InQueue Places = 1 << iota
	InInflight
	InCleanup
)

// String lists the places, e.g. "queue+inflight"; "none" for the empty set.
func (p Places) String() string {
	s := ""
	for _, x := range []struct {
		p    Places
		name string
	}{{InQueue, "queue"}, {InInflight, "inflight"}, {InCleanup, "cleanup"}} {
		if p&x.p != 0 {
			if s != "" {
				s += "+"
			}
			s += x.name
		}
	}
	if s == "" {
		return "none"
	}
	return s
}

// Data is the condition of an entry's data directory found at start.
type Data uint8

// Conditions of an entry's data, from best to worst.
const (
	DataIntact  Data = iota // metadata and schedule parse, and the job's NZB is there
	DataCorrupt             // the directory is there, but metadata, schedule or the NZB is missing or unreadable
	DataMissing             // no directory: a link that dangles
)

var dataNames = [...]string{DataIntact: "intact", DataCorrupt: "corrupt", DataMissing: "missing"}

// String returns the condition's name.
func (d Data) String() string {
	if int(d) < len(dataNames) {
		return dataNames[d]
	}
	return fmt.Sprintf("Data(%d)", uint8(d))
}

// Found is what the queue's directories hold for one entry at start.
type Found struct {
	Links Places // directories that hold a link to the entry
	Data  Data
	// Committed: some entry of the same job has a link, so the job's
	// Enqueue passed its commit point (only read for an entry with no link).
	Committed bool
}

// Decision is what recovery does with one entry: it was found in state
// From, event On applies, and it goes to To. Extra are links besides the
// one in From's directory (an entry found in two places: a rename that a
// power loss caught half-way); they are removed.
type Decision struct {
	From  State
	On    Event
	To    State
	Extra Places
}

// Recover decides what start-up does with entry id, found as f; the table
// in lifecycle.go has the rows. An entry with neither a link nor data is
// not an entry, and an error.
func Recover(id ID, f Found) (Decision, error) {
	var d Decision
	switch {
	case f.Links&InCleanup != 0:
		d.From, d.Extra = Cleanup, f.Links&^InCleanup
	case f.Links&InInflight != 0:
		d.From, d.Extra = InFlight, f.Links&^InInflight
	case f.Links&InQueue != 0:
		d.From = Queued
	case f.Data == DataMissing:
		return d, fmt.Errorf("jobs: entry %s: found neither a link nor data", id)
	default:
		d.From = Writing
	}
	switch {
	case d.From == Writing && !f.Committed:
		d.On = OnRecoverUncommitted
	case f.Data != DataIntact:
		d.On = OnRecoverCorrupt
	default:
		d.On = OnRecover
	}
	to, err := Next(id, d.From, d.On)
	d.To = to
	return d, err
}
