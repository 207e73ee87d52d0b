package proto

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCommandAppend(t *testing.T) {
	since := time.Date(2026, 11, 21, 22, 53, 0, 0, time.UTC)
	tests := []struct {
		cmd  Command
		want string
	}{
		{Capabilities(), "CAPABILITIES"},
		{ModeReader(), "MODE READER"},
		{ModeStream(), "MODE STREAM"},
		{AuthinfoUser("bob"), "AUTHINFO USER bob"},
		{AuthinfoPass("secret"), "AUTHINFO PASS secret"},
		{StartTLS(), "STARTTLS"},
		{Group("misc.test"), "GROUP misc.test"},
		{ListGroup("", ""), "LISTGROUP"},
		{ListGroup("misc.test", ""), "LISTGROUP misc.test"},
		{ListGroup("misc.test", Range(3, -1)), "LISTGROUP misc.test 3-"},
		{Article("<a@b>"), "ARTICLE <a@b>"},
		{Article(Number(42)), "ARTICLE 42"},
		{Head("<a@b>"), "HEAD <a@b>"},
		{Body(Number(7)), "BODY 7"},
		{Stat("<a@b>"), "STAT <a@b>"},
		{Over(Range(10, 20)), "OVER 10-20"},
		{XOver(Range(5, 5)), "XOVER 5"},
		{Hdr("Subject", Range(1, -1)), "HDR Subject 1-"},
		{XHdr("References", "<a@b>"), "XHDR References <a@b>"},
		{List("ACTIVE", "comp.*"), "LIST ACTIVE comp.*"},
		{List("NEWSGROUPS", ""), "LIST NEWSGROUPS"},
		{List("OVERVIEW.FMT", ""), "LIST OVERVIEW.FMT"},
		{List("HEADERS", ""), "LIST HEADERS"},
		{NewNews("*", since), "NEWNEWS * 20261121 225300 GMT"},
		{Date(), "DATE"},
		{Post(), "POST"},
		{IHave("<a@b>"), "IHAVE <a@b>"},
		{Check("<a@b>"), "CHECK <a@b>"},
		{TakeThis("<a@b>"), "TAKETHIS <a@b>"},
		{Quit(), "QUIT"},
	}
	for _, tc := range tests {
		got, err := tc.cmd.Append(nil)
		if err != nil {
			t.Errorf("%v: %v", tc.cmd, err)
			continue
		}
		if string(got) != tc.want+"\r\n" {
			t.Errorf("Append = %q; want %q", got, tc.want+"\r\n")
		}
		// What a client sends, a server parses back to the same command.
		back, err := ParseCommand(got)
		if err != nil {
			t.Errorf("ParseCommand(%q): %v", got, err)
			continue
		}
		if diff := cmp.Diff(tc.cmd, back); diff != "" {
			t.Errorf("ParseCommand(%q) (-sent +parsed):\n%s", got, diff)
		}
	}
}

func TestCommandRefused(t *testing.T) {
	tests := []struct {
		cmd     Command
		wantErr string
	}{
		{Command{}, "empty command"},
		{Command{Verb: "GR OUP"}, "not printable"},
		{Group(""), "empty argument"},
		{Group("a b"), "whitespace"},
		{Check("<a@b>\r\nQUIT"), "CR, LF or NUL"},
		{AuthinfoPass("x\x00y"), "NUL"},
		{Group(strings.Repeat("g", 600)), "exceeds 512"},
	}
	for _, tc := range tests {
		_, err := tc.cmd.Append(nil)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%q: error %v; want it to mention %q", tc.cmd.Verb, err, tc.wantErr)
		}
	}
	_, err := Group(strings.Repeat("g", 600)).Append(nil)
	if !errors.Is(err, ErrLineTooLong) {
		t.Errorf("long command: %v does not wrap ErrLineTooLong", err)
	}
}

func TestParseCommand(t *testing.T) {
	tests := []struct {
		line     string
		want     Command
		wantName string
		wantErr  string
	}{
		{line: "check <a@b>\r\n", want: Command{Verb: "CHECK", Args: []string{"<a@b>"}}, wantName: "CHECK"},
		{line: "mode stream\r\n", want: Command{Verb: "MODE", Args: []string{"STREAM"}}, wantName: "MODE STREAM"},
		{line: "list\r\n", want: Command{Verb: "LIST"}, wantName: "LIST ACTIVE"},
		{line: "list newsgroups  comp.*\n", want: Command{Verb: "LIST", Args: []string{"NEWSGROUPS", "comp.*"}}, wantName: "LIST NEWSGROUPS"},
		{line: "AuthInfo user Bob\r\n", want: Command{Verb: "AUTHINFO", Args: []string{"USER", "Bob"}}, wantName: "AUTHINFO USER"},
		{line: "TAKETHIS\t<x@y>\r\n", want: Command{Verb: "TAKETHIS", Args: []string{"<x@y>"}}, wantName: "TAKETHIS"},
		{line: "\r\n", wantErr: "empty command line"},
		{line: "   \r\n", wantErr: "empty command line"},
		{line: "CHECK <a\x00b>\r\n", wantErr: "NUL"},
		{line: "CHECK <a\rb>\r\n", wantErr: "CR"},
		{line: "GROUP " + strings.Repeat("x", 520) + "\r\n", wantErr: "exceeds 512"},
	}
	for _, tc := range tests {
		got, err := ParseCommand([]byte(tc.line))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseCommand(%q) error = %v; want it to mention %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseCommand(%q): %v", tc.line, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseCommand(%q) (-want +got):\n%s", tc.line, diff)
		}
		if got.Name() != tc.wantName {
			t.Errorf("ParseCommand(%q).Name() = %q; want %q", tc.line, got.Name(), tc.wantName)
		}
	}
}

func TestCommandStringMasksPassword(t *testing.T) {
	if got := AuthinfoPass("hunter2").String(); strings.Contains(got, "hunter2") {
		t.Errorf("String() = %q leaks the password", got)
	}
	if got := Check("<a@b>").String(); got != "CHECK <a@b>" {
		t.Errorf("String() = %q", got)
	}
}

func TestParseDate(t *testing.T) {
	got, err := ParseDate(Response{Code: 111, Text: "20261121225300"})
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 21, 22, 53, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("got %v; want %v", got, want)
	}
	if _, err := ParseDate(Response{Code: 111, Text: "yesterday"}); err == nil {
		t.Error("no error for a malformed date")
	}
}

// FuzzCommand checks that every line ParseCommand accepts re-encodes (after
// Append's validation) to a line that parses to the same command, and that
// Append never emits a line a server would split differently.
func FuzzCommand(f *testing.F) {
	for _, s := range []string{
		"CHECK <a@b>\r\n", "takethis <x@y>\r\n", "MODE STREAM\r\n", "list active.times\r\n",
		"AUTHINFO PASS secret\r\n", "OVER 1-\r\n", "HDR Subject <a@b>\r\n", "\r\n", "GROUP \x00\r\n",
		"NEWNEWS * 20261121 000000 GMT\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		c, err := ParseCommand(line)
		if err != nil {
			return
		}
		wire, err := c.Append(nil)
		if err != nil {
			// Only non-printable keywords may be refused: ParseCommand keeps
			// bytes above 0x7e in the verb, which a client never sends.
			return
		}
		if len(wire) > MaxCommandLine {
			t.Fatalf("Append produced %d octets", len(wire))
		}
		c2, err := ParseCommand(wire)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", wire, err)
		}
		if diff := cmp.Diff(c, c2); diff != "" {
			t.Fatalf("round trip of %q (-first +second):\n%s", line, diff)
		}
	})
}
