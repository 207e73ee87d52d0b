package nntptest

import (
	"slices"
	"strings"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// Received is one command line the server read, recorded before it was
// answered (so once a client has the response, the record is there).
type Received struct {
	Conn int           // connection number, from 1 in accept order
	Cmd  proto.Command // as parsed; AUTHINFO PASS keeps its password
	At   time.Time     // when it was read (wall clock)
}

// A Transfer is one article the server received through TAKETHIS, IHAVE
// or POST, in arrival order.
type Transfer struct {
	Conn      int
	Cmd       string // "TAKETHIS", "IHAVE" or "POST"
	MessageID string // the command's argument (for POST, the article's Message-ID)
	Article   []byte // the block as received, dot-unstuffed, line endings as sent
	Code      int    // the response sent: 239/439, 235/436/437, 240/441, or a fault's code
	At        time.Time
}

// Accepted reports whether the server acknowledged the article (239, 235, 240).
func (t Transfer) Accepted() bool {
	return t.Code == proto.CodeTakeThisOK || t.Code == proto.CodeTransferOK || t.Code == proto.CodePosted
}

func (s *Server) record(conn int, cmd proto.Command) {
	if s.opts.Unrecorded {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmds = append(s.cmds, Received{Conn: conn, Cmd: cmd, At: time.Now()})
	s.notifyLocked()
}

func (s *Server) recordTransfer(t Transfer) {
	t.At = time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.xfers = append(s.xfers, t)
	if t.Accepted() {
		s.accepted[t.MessageID] = true
	}
	s.notifyLocked()
}

// matches reports whether cmd is counted under name: its verb ("LIST") or
// its full name ("LIST ACTIVE", "MODE STREAM").
func matches(cmd proto.Command, name string) bool {
	return name == cmd.Verb || name == cmd.Name()
}

// Count returns how many commands named name the server has received on all
// connections. name is a verb ("BODY", "LIST": every LIST variant) or a full
// name ("LIST ACTIVE", "MODE STREAM"), in any case.
func (s *Server) Count(name string) int { return s.CountConn(0, name) }

// CountConn is Count for connection conn only (0 means every connection).
func (s *Server) CountConn(conn int, name string) int {
	name = strings.ToUpper(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.cmds {
		if (conn == 0 || r.Conn == conn) && matches(r.Cmd, name) {
			n++
		}
	}
	return n
}

// Commands returns every command received, in order.
func (s *Server) Commands() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.cmds)
}

// CommandLines returns the commands received on connection conn (0: all) as
// lines without CRLF, AUTHINFO PASS masked, for compact cmp.Diff assertions.
func (s *Server) CommandLines(conn int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.cmds {
		if conn == 0 || r.Conn == conn {
			out = append(out, r.Cmd.String())
		}
	}
	return out
}

// Conns returns how many connections the server has accepted.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nconns
}

// OpenConns returns how many client connections are open now.
func (s *Server) OpenConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Transfers returns every article received through TAKETHIS, IHAVE and
// POST, in arrival order.
func (s *Server) Transfers() []Transfer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.xfers)
}

// TransferIDs returns the message-ids of Transfers, in arrival order.
func (s *Server) TransferIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.xfers))
	for _, t := range s.xfers {
		out = append(out, t.MessageID)
	}
	return out
}

// AcceptedIDs returns the message-ids of the accepted transfers, in order.
func (s *Server) AcceptedIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, t := range s.xfers {
		if t.Accepted() {
			out = append(out, t.MessageID)
		}
	}
	return out
}

// Reset forgets the recorded commands and transfers (not the store, the
// faults, nor the connection count), for a test in phases.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmds, s.xfers = nil, nil
	s.notifyLocked()
}
