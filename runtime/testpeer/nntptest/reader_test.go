package nntptest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// step is one command and the response lines it must draw.
type step struct {
	send string
	want []string
}

func runSteps(t *testing.T, c *client, steps []step) {
	t.Helper()
	for _, st := range steps {
		if diff := cmp.Diff(st.want, c.do(st.send)); diff != "" {
			t.Errorf("%s: response mismatch (-want +got):\n%s", st.send, diff)
		}
	}
}

var fixedNow = time.Date(2024, 3, 4, 5, 6, 7, 0, time.UTC)

// a3 is in wire form with a References field.
const a3 = "Path: x!not-for-mail\r\nFrom: c@example.com\r\nNewsgroups: misc.test\r\nSubject: Re: first\r\n" +
	"Date: Wed, 03 Jan 2024 00:00:00 +0000\r\nMessage-ID: <3@example>\r\nReferences: <1@example>\r\n\r\nthree\r\n"

// readerFixture is a server with three groups and three articles:
// misc.test 1 <1@example>, 2 <2@example>, 3 <3@example>; alt.test 1 <2@example>;
// local.empty has none.
func readerFixture(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedNow }
	}
	s := Start(t, opts)
	s.AddGroup(Group{Name: "misc.test", Description: "For tests"})
	s.AddGroup(Group{Name: "alt.test", Description: "Alternative tests", Status: "m"})
	s.AddGroup(Group{Name: "local.empty"})
	for _, a := range []Article{
		NewArticle("<1@example>", "misc.test", "first", []byte("line one\n.dot line\n")),
		NewArticle("<2@example>", "misc.test,alt.test", "second", []byte("two\n")),
		{Raw: []byte(a3), Arrived: fixedNow.Add(time.Hour)},
	} {
		if a.Arrived.IsZero() {
			a.Arrived = fixedNow.Add(-time.Hour)
		}
		if err := s.AddArticle(a); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

const (
	head1 = "Path: nntptest!not-for-mail|From: Tester <tester@example.com>|Newsgroups: misc.test|Subject: first|Date: Tue, 02 Jan 2024 03:04:05 +0000|Message-ID: <1@example>"
)

func TestReaderArticles(t *testing.T) {
	s := readerFixture(t, Options{})
	c := dialGreeted(t, s)
	runSteps(t, c, []step{
		{"ARTICLE", []string{"412 No newsgroup selected"}},
		{"ARTICLE 1", []string{"412 No newsgroup selected"}},
		{"GROUP nosuch", []string{"411 No such group"}},
		{"GROUP", []string{"501 Syntax: GROUP newsgroup"}},
		// By message-id: number 0, works without a group.
		{"STAT <2@example>", []string{"223 0 <2@example>"}},
		{"STAT <nosuch@example>", []string{"430 No such article"}},
		{"GROUP misc.test", []string{"211 3 1 3 misc.test"}},
		// GROUP makes the first article current.
		{"STAT", []string{"223 1 <1@example>"}},
		{"ARTICLE", []string{
			"220 1 <1@example>",
			"Path: nntptest!not-for-mail", "From: Tester <tester@example.com>", "Newsgroups: misc.test",
			"Subject: first", "Date: Tue, 02 Jan 2024 03:04:05 +0000", "Message-ID: <1@example>",
			"", "line one", "..dot line", ".",
		}},
		{"HEAD 2", []string{
			"221 2 <2@example>",
			"Path: nntptest!not-for-mail", "From: Tester <tester@example.com>", "Newsgroups: misc.test,alt.test",
			"Subject: second", "Date: Tue, 02 Jan 2024 03:04:05 +0000", "Message-ID: <2@example>", ".",
		}},
		// HEAD 2 made 2 current; a message-id does not change it.
		{"BODY <1@example>", []string{"222 0 <1@example>", "line one", "..dot line", "."}},
		{"BODY", []string{"222 2 <2@example>", "two", "."}},
		{"NEXT", []string{"223 3 <3@example>"}},
		{"NEXT", []string{"421 No next article"}},
		{"LAST", []string{"223 2 <2@example>"}},
		{"LAST", []string{"223 1 <1@example>"}},
		{"LAST", []string{"422 No previous article"}},
		{"ARTICLE 9", []string{"423 No article with that number"}},
		{"ARTICLE x", []string{"501 Syntax: article number or message-id"}},
		{"STAT 3", []string{"223 3 <3@example>"}},
		{"BODY", []string{"222 3 <3@example>", "three", "."}},
		// The same article has another number in another group.
		{"GROUP alt.test", []string{"211 1 1 1 alt.test"}},
		{"STAT", []string{"223 1 <2@example>"}},
		{"GROUP local.empty", []string{"211 0 1 0 local.empty"}},
		{"STAT", []string{"420 Current article number is invalid"}},
		{"NEXT", []string{"420 Current article number is invalid"}},
		{"QUIT", []string{"205 Bye"}},
	})
	if got := c.rest(); got != "" {
		t.Errorf("after QUIT got %q, want EOF", got)
	}
}

func TestReaderLists(t *testing.T) {
	s := readerFixture(t, Options{})
	s.AddGroup(Group{Name: "misc.old", Low: 5, High: 10, Status: "n"})
	c := dialGreeted(t, s)
	runSteps(t, c, []step{
		{"LISTGROUP", []string{"412 No newsgroup selected"}},
		{"LISTGROUP misc.test", []string{"211 3 1 3 misc.test list follows", "1", "2", "3", "."}},
		{"LISTGROUP misc.test 2-", []string{"211 3 1 3 misc.test list follows", "2", "3", "."}},
		{"LISTGROUP misc.test 1-2", []string{"211 3 1 3 misc.test list follows", "1", "2", "."}},
		{"LISTGROUP misc.test 3", []string{"211 3 1 3 misc.test list follows", "3", "."}},
		{"LISTGROUP misc.test 3-x", []string{"501 Syntax: LISTGROUP [newsgroup [range]]"}},
		{"LISTGROUP misc.old", []string{"211 0 5 10 misc.old list follows", "."}},
		{"LIST", []string{"215 List follows",
			"alt.test 0000000001 0000000001 m", "local.empty 0000000000 0000000001 y", "misc.old 0000000010 0000000005 n", "misc.test 0000000003 0000000001 y", "."}},
		{"LIST ACTIVE misc.*", []string{"215 List follows", "misc.old 0000000010 0000000005 n", "misc.test 0000000003 0000000001 y", "."}},
		{"LIST ACTIVE *,!misc.*,misc.test", []string{"215 List follows",
			"alt.test 0000000001 0000000001 m", "local.empty 0000000000 0000000001 y", "misc.test 0000000003 0000000001 y", "."}},
		{"LIST NEWSGROUPS ?l?.*", []string{"215 List follows", "alt.test\tAlternative tests", "."}},
		{"LIST OVERVIEW.FMT", []string{"215 Order of fields in overview database",
			"Subject:", "From:", "Date:", "Message-ID:", "References:", ":bytes", ":lines", "Xref:full", "."}},
		{"LIST HEADERS", []string{"215 Headers supported", ":", ":bytes", ":lines", "."}},
		{"LIST HEADERS BOGUS", []string{"501 Syntax: LIST HEADERS [MSGID|RANGE]"}},
		{"LIST DISTRIBUTIONS", []string{"501 Unknown keyword"}},
		{"DATE", []string{"111 20240304050607"}},
		// Only <3@example> arrived after fixedNow; <2@example> is in alt.test too.
		{"NEWNEWS misc.* 20240304 050607 GMT", []string{"230 List of new articles follows", "<3@example>", "."}},
		{"NEWNEWS alt.* 240304 050607", []string{"230 List of new articles follows", "."}},
		{"NEWNEWS * 20240101 000000 GMT", []string{"230 List of new articles follows",
			"<1@example>", "<2@example>", "<3@example>", "."}},
		{"NEWNEWS * 2024 000000", []string{"501 Syntax: NEWNEWS wildmat yyyymmdd hhmmss [GMT]"}},
		{"FROBNICATE", []string{"500 What?"}},
	})
}

// TestReaderWildmat checks that LIST ACTIVE and NEWNEWS filter with
// proto.MatchWildmat (RFC 3977 §4, INN uwildmat): the last matching element
// decides, "!" negates, "?" is one UTF-8 character, and the §4.4 sets and
// escapes work while a malformed element matches nothing. The matcher itself
// is tested and fuzzed in proto; this is about the server using it.
func TestReaderWildmat(t *testing.T) {
	s := readerFixture(t, Options{})
	for _, name := range []string{"alt.binaries.test", "comp.lang.c", "comp.lang.go", "comp.os", "de.alt.grüße"} {
		s.AddGroup(Group{Name: name})
	}
	all := []string{"alt.binaries.test", "alt.test", "comp.lang.c", "comp.lang.go", "comp.os", "de.alt.grüße", "local.empty", "misc.test"}
	c := dialGreeted(t, s)
	tests := []struct {
		pat  string
		want []string
	}{
		{"*", all},
		{"misc.*", []string{"misc.test"}},
		{"*,!*.test", []string{"comp.lang.c", "comp.lang.go", "comp.os", "de.alt.grüße", "local.empty"}},
		{"*,!misc.*,misc.test", all},
		{"!misc.*", nil}, // a lone negation matches nothing
		{"?isc.test", []string{"misc.test"}},
		{"de.alt.gr??e", []string{"de.alt.grüße"}}, // "?" is a character, not an octet
		{"*ü*", []string{"de.alt.grüße"}},
		{"*.binaries.*", []string{"alt.binaries.test"}},
		{"comp.*,!comp.lang.*,comp.lang.go", []string{"comp.lang.go", "comp.os"}},
		// RFC 3977 §4.4 sets and escapes, as INN implements them.
		{"[a-c]*", []string{"alt.binaries.test", "alt.test", "comp.lang.c", "comp.lang.go", "comp.os"}},
		{"[!a-l]*", []string{"misc.test"}},
		{"comp.lang.[cg]*", []string{"comp.lang.c", "comp.lang.go"}},
		{"misc\\.test", []string{"misc.test"}},
		{"comp.[,misc.*", []string{"misc.test"}}, // the malformed element matches nothing
	}
	for _, tt := range tests {
		lines := c.do("LIST ACTIVE " + tt.pat)
		if len(lines) < 2 || lines[0] != "215 List follows" || lines[len(lines)-1] != "." {
			t.Errorf("LIST ACTIVE %s: response %q, want a 215 list", tt.pat, lines)
			continue
		}
		var got []string
		for _, l := range lines[1 : len(lines)-1] {
			name, _, _ := strings.Cut(l, " ")
			got = append(got, name)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("LIST ACTIVE %s: groups (-want +got):\n%s", tt.pat, diff)
		}
	}
	// NEWNEWS filters the same way: <2@example> is the only article in a
	// group other than misc.test (alt.test).
	runSteps(t, c, []step{
		{"NEWNEWS [a-l]* 20240101 000000 GMT", []string{"230 List of new articles follows", "<2@example>", "."}},
		{"NEWNEWS *,!misc.* 20240101 000000 GMT", []string{"230 List of new articles follows", "<2@example>", "."}},
		{"NEWNEWS m[h-j]sc.test 20240101 000000 GMT", []string{"230 List of new articles follows", "<1@example>", "<2@example>", "<3@example>", "."}},
	})
}

func TestReaderOverview(t *testing.T) {
	s := readerFixture(t, Options{})
	c := dialGreeted(t, s)
	over1 := "1\tfirst\tTester <tester@example.com>\tTue, 02 Jan 2024 03:04:05 +0000\t<1@example>\t\t190\t2\tXref: nntptest misc.test:1"
	over2 := "2\tsecond\tTester <tester@example.com>\tTue, 02 Jan 2024 03:04:05 +0000\t<2@example>\t\t184\t1\tXref: nntptest alt.test:1 misc.test:2"
	over3 := "3\tRe: first\tc@example.com\tWed, 03 Jan 2024 00:00:00 +0000\t<3@example>\t<1@example>\t184\t1\tXref: nntptest misc.test:3"
	runSteps(t, c, []step{
		{"OVER 1-", []string{"412 No newsgroup selected"}},
		{"OVER <3@example>", []string{"224 Overview information follows", "0" + over3[1:], "."}},
		{"GROUP misc.test", []string{"211 3 1 3 misc.test"}},
		{"OVER", []string{"224 Overview information follows", over1, "."}},
		{"OVER 1-", []string{"224 Overview information follows", over1, over2, over3, "."}},
		{"XOVER 2-3", []string{"224 Overview information follows", over2, over3, "."}},
		{"OVER 4-", []string{"423 No articles in that range"}},
		{"OVER 2-x", []string{"501 Syntax: OVER [range|message-id]"}},
		{"HDR Subject 1-", []string{"225 Headers follow", "1 first", "2 second", "3 Re: first", "."}},
		{"HDR references 1-3", []string{"225 Headers follow", "1 ", "2 ", "3 <1@example>", "."}},
		{"HDR :lines <1@example>", []string{"225 Headers follow", "0 2", "."}},
		{"HDR :bytes 2", []string{"225 Headers follow", "2 184", "."}},
		{"HDR Xref 2", []string{"225 Headers follow", "2 nntptest alt.test:1 misc.test:2", "."}},
		{"XHDR References 2-3", []string{"221 Header follows", "2 (none)", "3 <1@example>", "."}},
		{"XHDR Subject <2@example>", []string{"221 Header follows", "<2@example> second", "."}},
		{"HDR", []string{"501 Syntax: HDR field [range|message-id]"}},
	})
	// The :bytes figures are the wire sizes of the stored articles.
	for id, want := range map[string]int{"<1@example>": 190, "<2@example>": 184, "<3@example>": 184} {
		if b, _ := s.ArticleBytes(id); len(b) != want {
			t.Errorf("%s is %d bytes in wire form, overview says %d", id, len(b), want)
		}
	}
}

func TestPost(t *testing.T) {
	s := readerFixture(t, Options{})
	c := dialGreeted(t, s)
	runSteps(t, c, []step{{"POST", []string{"340 Send article to be posted"}}})
	c.send("From: p@example.com\r\nNewsgroups: misc.test\r\nSubject: posted\r\n\r\n..leading dot\r\n.\r\n")
	if got := c.line(); got != "240 Article received OK" {
		t.Fatalf("POST: %q", got)
	}
	// Posting with no existing group fails; without Message-ID one is made.
	runSteps(t, c, []step{{"POST", []string{"340 Send article to be posted"}}})
	c.send("From: p@example.com\r\nNewsgroups: nosuch.group\r\nSubject: x\r\nMessage-ID: <p2@example>\r\n\r\nx\r\n.\r\n")
	if got := c.line(); got != "441 Posting failed: no existing group in Newsgroups" {
		t.Fatalf("POST to a missing group: %q", got)
	}
	runSteps(t, c, []step{
		{"GROUP misc.test", []string{"211 4 1 4 misc.test"}},
		{"BODY 4", []string{"222 4 <post.1.1@nntptest>", "..leading dot", "."}},
	})
	xs := s.Transfers()
	if len(xs) != 2 || xs[0].Cmd != "POST" || xs[0].Code != 240 || xs[1].Code != 441 ||
		string(xs[0].Article) != "From: p@example.com\r\nNewsgroups: misc.test\r\nSubject: posted\r\n\r\n.leading dot\r\n" {
		t.Errorf("transfers: %+v", xs)
	}

	np := readerFixture(t, Options{NoPosting: true})
	c = dial(t, np)
	if g := c.line(); g != "201 nntptest NNTP server ready (nntptest)" {
		t.Errorf("greeting without posting: %q", g)
	}
	runSteps(t, c, []step{
		{"POST", []string{"440 Posting not permitted"}},
		{"MODE READER", []string{"201 Posting prohibited"}},
	})
}

// TestBinaryBodies serves a body holding every octet but CR and LF, with
// lines that start with dots, unchanged.
func TestBinaryBodies(t *testing.T) {
	s := Start(t, Options{})
	s.AddGroup(Group{Name: "alt.binaries.test"})
	var body []byte
	for i := 0; i < 256; i++ {
		if i == '\r' || i == '\n' {
			continue
		}
		body = append(body, byte(i))
		if i%64 == 0 {
			body = append(body, "\r\n."...)
		}
	}
	body = append(body, "\r\n.\r\n..\r\n"...)
	if err := s.AddArticle(NewArticle("<bin@example>", "alt.binaries.test", "yEnc", body)); err != nil {
		t.Fatal(err)
	}
	c := dialGreeted(t, s)
	c.send("BODY <bin@example>\r\n")
	if got := c.line(); got != "222 0 <bin@example>" {
		t.Fatalf("BODY: %q", got)
	}
	var got []byte
	for {
		l, err := c.r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		if string(l) == ".\r\n" {
			break
		}
		if l[0] == '.' {
			l = l[1:] // undo dot-stuffing
		}
		got = append(got, l...)
	}
	if diff := cmp.Diff(body, got); diff != "" {
		t.Errorf("body (-stored +served):\n%s", diff)
	}
}

// TestNativeAndWireForms stores the same article in LF and CRLF form and
// checks that both are served in wire form.
func TestNativeAndWireForms(t *testing.T) {
	native := "Newsgroups: g\nMessage-ID: <n@x>\nSubject: s\n\nbody\n"
	wire := "Newsgroups: g\r\nMessage-ID: <w@x>\r\nSubject: s\r\n\r\nbody\r\n"
	s := Start(t, Options{})
	s.AddGroup(Group{Name: "g"})
	for _, raw := range []string{native, wire} {
		if err := s.AddArticle(Article{Raw: []byte(raw)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"<n@x>", "<w@x>"} {
		b, ok := s.ArticleBytes(id)
		want := "Newsgroups: g\r\nMessage-ID: " + id + "\r\nSubject: s\r\n\r\nbody\r\n"
		if !ok || string(b) != want {
			t.Errorf("%s stored as %q, want %q", id, b, want)
		}
	}
	if s.ArticleNumber("g", "<w@x>") != 2 {
		t.Errorf("second article is not number 2 in g")
	}
	for _, bad := range []Article{
		{Raw: []byte("Subject: no id\n\nx\n")},
		{Raw: []byte(native)}, // duplicate
		{Raw: []byte("no colon here\n\nx\n"), MessageID: "<c@x>"},
		{Raw: []byte("Subject: s\n\nx\n"), MessageID: "<d@x>", Numbers: map[string]int64{"nosuch": 1}},
		{Raw: []byte("Subject: s\n\nx\n"), MessageID: "<e@x>", Numbers: map[string]int64{"g": 1}}, // taken
	} {
		if err := s.AddArticle(bad); err == nil {
			t.Errorf("AddArticle(%q) succeeded", bad.Raw)
		}
	}
	if !s.RemoveArticle("<n@x>") || s.RemoveArticle("<n@x>") {
		t.Errorf("RemoveArticle did not remove exactly once")
	}
	c := dialGreeted(t, s)
	runSteps(t, c, []step{
		{"STAT <n@x>", []string{"430 No such article"}},
		{"GROUP g", []string{"211 1 2 2 g"}},
	})
}
