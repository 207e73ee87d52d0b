package driver

import (
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// machineState is a machine.Conn whose answers to Settle's questions are
// set by the table, with the optional interfaces it is given.
type machineState struct {
	closed, wantTLS, paused bool
	eofs, received          int
	recvErr                 error
}

func (m *machineState) Receive(time.Time, []byte) error { m.received++; return m.recvErr }
func (m *machineState) Timeout(time.Time)               {}
func (m *machineState) AppendOutgoing(d []byte) []byte  { return d }
func (m *machineState) Deadline() (time.Time, bool)     { return time.Time{}, false }
func (m *machineState) Closed() bool                    { return m.closed }

type tlsMachine struct{ *machineState }

func (m tlsMachine) WantTLS() bool                  { return m.wantTLS }
func (m tlsMachine) TLSDone(time.Time, error) error { return nil }

type eofMachine struct{ *machineState }

func (m eofMachine) ReceiveEOF(time.Time) { m.eofs++ }
func (m eofMachine) Paused() bool         { return m.paused }

func TestSettle(t *testing.T) {
	reset := os.NewSyscallError("read", errors.New("connection reset"))
	tests := []struct {
		name     string
		m        func(s *machineState) any
		state    machineState
		readErr  error
		want     Next
		wantErr  string
		wantRead bool
	}{
		{name: "running, reads", m: plain, want: Wait, wantRead: true},
		{name: "closed wins over everything", m: tlsOf, state: machineState{closed: true, wantTLS: true}, readErr: io.EOF, want: Close},
		{name: "STARTTLS asked", m: tlsOf, state: machineState{wantTLS: true}, want: StartTLS, wantRead: true},
		{name: "EOF, machine cannot hear it", m: plain, readErr: io.EOF, want: End, wantErr: "read: EOF"},
		{name: "EOF, EOFReceiver still busy: keeps its other inputs, no reads", m: eofOf, readErr: io.EOF, want: Wait},
		{name: "read failed, even for an EOFReceiver", m: eofOf, readErr: reset, want: End, wantErr: "read: read: connection reset"},
		{name: "paused: no reads", m: eofOf, state: machineState{paused: true}, want: Wait},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.state
			m := tc.m(&s).(interface {
				Receive(time.Time, []byte) error
				Timeout(time.Time)
				AppendOutgoing([]byte) []byte
				Deadline() (time.Time, bool)
				Closed() bool
			})
			next, err := Settle(m, tc.readErr)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if d := cmp.Diff([]any{tc.want, tc.wantErr}, []any{next, gotErr}); d != "" {
				t.Errorf("Settle (-want +got):\n%s", d)
			}
			if got := MayRead(m, tc.readErr); got != tc.wantRead {
				t.Errorf("MayRead = %v, want %v", got, tc.wantRead)
			}
		})
	}
}

func plain(s *machineState) any { return s }
func tlsOf(s *machineState) any { return tlsMachine{s} }
func eofOf(s *machineState) any { return eofMachine{s} }

// TestInput: bytes go to Receive; a clean EOF to ReceiveEOF and sticks; a
// failed read sticks without ReceiveEOF; a Receive error is returned and
// the EOF behind it is not delivered.
func TestInput(t *testing.T) {
	now := time.Unix(0, 0)
	s := &machineState{}
	m := eofMachine{s}
	if rerr, err := Input(now, m, []byte("x"), io.EOF); rerr != io.EOF || err != nil || s.received != 1 || s.eofs != 1 {
		t.Errorf("bytes and EOF: readErr %v, err %v, %d receives, %d EOFs; want EOF, nil, 1, 1", rerr, err, s.received, s.eofs)
	}
	s = &machineState{}
	m = eofMachine{s}
	reset := errors.New("reset")
	if rerr, err := Input(now, m, nil, reset); rerr != reset || err != nil || s.received != 0 || s.eofs != 0 {
		t.Errorf("failed read: readErr %v, err %v, %d receives, %d EOFs; want reset, nil, 0, 0", rerr, err, s.received, s.eofs)
	}
	bad := errors.New("protocol")
	s = &machineState{recvErr: bad}
	m = eofMachine{s}
	if _, err := Input(now, m, []byte("x"), io.EOF); err != bad || s.eofs != 0 {
		t.Errorf("Receive failed: err %v, %d EOFs; want protocol, 0", err, s.eofs)
	}
}

// TestStep: nil and no callback go on; ErrStop (also wrapped) stops well;
// another error ends the run, wrapped as "step: ...".
func TestStep(t *testing.T) {
	now := time.Unix(0, 0)
	bad := errors.New("disk on fire")
	tests := []struct {
		name     string
		step     func(time.Time) error
		wantStop bool
		wantErr  string
	}{
		{name: "no callback"},
		{name: "nil", step: func(time.Time) error { return nil }},
		{name: "ErrStop", step: func(time.Time) error { return ErrStop }, wantStop: true},
		{name: "ErrStop wrapped", step: func(time.Time) error { return fmt.Errorf("ready: %w", ErrStop) }, wantStop: true},
		{name: "failure", step: func(time.Time) error { return bad }, wantErr: "step: disk on fire"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stop, err := Step(tc.step, now)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if stop != tc.wantStop || gotErr != tc.wantErr {
				t.Errorf("Step = %v, %q; want %v, %q", stop, gotErr, tc.wantStop, tc.wantErr)
			}
		})
	}
}
