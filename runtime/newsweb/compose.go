package newsweb

// Composing an article to post from what a reader typed (RFC 5536,
// RFC 5537 §3.4.4 for References): the fields are checked and bounded,
// the subject and display name MIME-encoded when not ASCII (RFC 2047), the
// body made CRLF text/plain UTF-8 with no line over 998 bytes (RFC 5322
// §2.1.1), and the article gets a Message-ID, a Date, and for a reply
// References (the parent's, then the parent; trimmed to the first and the
// last maxRefs-1 when long) and In-Reply-To.
//
// A reader sets no header field: the header is built here from the
// draft's five fields, so Sender, Approved, Control, Path, Injection-*,
// Message-ID, Supersedes and the rest cannot be sent. The From address is
// the account's (its name at from_domain); the reader chooses only the
// display name, which may not look like an address. Control messages
// cannot be posted: the control and junk groups are refused, and so is a
// subject starting with "cmsg " (an old-style control message). The
// article POSTed to a server carries X-Newsweb-Trace, in Injection-Info's
// syntax (RFC 5536 §3.2.8): the site, the client's address and a keyed
// hash of the account, so that an abuse desk can have the site name the
// account; Injection-Info itself is then the news server's to add (RFC
// 5537 §3.4; INN's nnrpd refuses an article that carries one). Through a
// server that has newsweb inject (ServerConfig.Inject, inject.go),
// newsweb is the injecting agent: the article carries instead newsweb's
// own Path, Injection-Date and Injection-Info (injectionFields), with the
// same site, client address and account hash, and the address for abuse
// reports when one is configured. Every value in those fields is
// newsweb's or checked to be a token (postingHost, CheckPathIdentity,
// CheckComplaintsTo): nothing a reader types reaches them.

import (
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/newsflow/newsflow/proto"
)

// Limits on what a reader may post.
const (
	maxPostBody       = 64 << 10 // bytes of body text
	maxPostLine       = 998      // bytes per body line (RFC 5322 §2.1.1)
	maxPostSubject    = 300      // bytes of subject
	maxPostNewsgroups = 10
	maxDisplayName    = 100 // bytes of display name
	maxRefs           = 21  // References kept: the first and the last 20
)

// errCompose marks a post that cannot be made as given (a 400 with its text).
var errCompose = errors.New("cannot post")

// draft is what a reader sends: the JSON API's body, or the form's fields.
type draft struct {
	Newsgroups []string `json:"newsgroups"`
	Subject    string   `json:"subject"`
	Body       string   `json:"body"`
	References string   `json:"references,omitempty"` // the parent's message-id
	Name       string   `json:"name,omitempty"`       // the display name; the account's name when empty
}

// traceHeader is the header field that traces a post to its account.
const traceHeader = "X-Newsweb-Trace"

// parent is what a reply needs of the article it answers.
type parent struct {
	ID         string
	References []string
}

// composed is an article ready for POST.
type composed struct {
	ID  string
	Raw []byte // CRLF wire form
}

// compose builds the article. user is the poster's identity, domain the
// configured from_domain, id a fresh message-id, par the parent (nil for a
// new thread), trace the value of traceHeader ("" for none).
func compose(d draft, user, domain, id string, now time.Time, par *parent, trace string) (composed, error) {
	fail := func(format string, a ...any) (composed, error) {
		return composed{}, fmt.Errorf("%w: "+format, append([]any{errCompose}, a...)...)
	}
	if len(d.Newsgroups) == 0 || len(d.Newsgroups) > maxPostNewsgroups {
		return fail("name 1 to %d newsgroups", maxPostNewsgroups)
	}
	for _, g := range d.Newsgroups {
		if err := proto.ValidGroupName(g); err != nil {
			return fail("newsgroup %q: %v", g, err)
		}
		if controlGroup(g) {
			return fail("newsgroup %q holds control messages, which are not posted from the web", g)
		}
	}
	subject := strings.Join(strings.Fields(d.Subject), " ")
	switch {
	case subject == "":
		return fail("the subject is empty: write one")
	case len(subject) > maxPostSubject:
		return fail("the subject is %d bytes long: shorten it to %d", len(subject), maxPostSubject)
	case !printable(subject):
		return fail("the subject holds control characters: write it again")
	}
	if len(subject) >= 5 && strings.EqualFold(subject[:5], "cmsg ") {
		return fail("a subject starting with \"cmsg \" is a control message, which is not posted from the web")
	}
	from, err := fromField(d.Name, user, domain)
	if err != nil {
		return fail("%v", err)
	}
	body, err := bodyText(d.Body)
	if err != nil {
		return fail("%v", err)
	}
	var h strings.Builder
	field := func(name, value string) { h.WriteString(name + ": " + value + "\r\n") }
	field("From", from)
	field("Newsgroups", strings.Join(d.Newsgroups, ","))
	field("Subject", mime.QEncoding.Encode("utf-8", subject))
	field("Date", proto.FormatArticleDate(now))
	field("Message-ID", id)
	if par != nil {
		refs := append(append([]string{}, par.References...), par.ID)
		if len(refs) > maxRefs {
			refs = append(refs[:1], refs[len(refs)-(maxRefs-1):]...)
		}
		field("References", strings.Join(refs, " "))
		field("In-Reply-To", par.ID)
	}
	field("MIME-Version", "1.0")
	field("Content-Type", "text/plain; charset=utf-8; format=flowed")
	field("Content-Transfer-Encoding", "8bit")
	field("User-Agent", "newsweb")
	if trace != "" {
		field(traceHeader, trace)
	}
	h.WriteString("\r\n")
	h.WriteString(body)
	return composed{ID: id, Raw: []byte(h.String())}, nil
}

// injectionFields is the header fields with which newsweb injects an
// article itself (RFC 5537 §3.4): Path (its path identity, ".POSTED" for
// the injection point, and the tail entry "not-for-mail", RFC 5537
// §3.2.1), Injection-Date (RFC 5536 §3.2.7) and Injection-Info (§3.2.8:
// the path identity, the posting host, the account's keyed hash, and
// mail-complaints-to when complaints is set). pathID, host, account and
// complaints are checked tokens (see the top of the file).
func injectionFields(pathID, host, account, complaints string, now time.Time) string {
	return "Path: " + pathID + "!.POSTED!not-for-mail\r\n" +
		"Injection-Date: " + proto.FormatArticleDate(now) + "\r\n" +
		"Injection-Info: " + injectionInfo(pathID, host, account, complaints) + "\r\n"
}

// injectionInfo is a value in Injection-Info's syntax (RFC 5536 §3.2.8):
// the site, the posting host, the account's keyed hash, and
// mail-complaints-to when complaints is set. It is Injection-Info's value
// and traceHeader's.
func injectionInfo(site, host, account, complaints string) string {
	info := fmt.Sprintf("%s; posting-host=%q; posting-account=%q", site, host, account)
	if complaints != "" {
		info += fmt.Sprintf("; mail-complaints-to=%q", complaints)
	}
	return info
}

// fromField is the From header: the display name the reader gave (the
// user's name when none) and the account's address, the user at domain.
// A name that holds an address, or what could pass for one, is refused.
func fromField(name, user, domain string) (string, error) {
	addr := localPart(user) + "@" + domain // Posting.address
	name = strings.Join(strings.Fields(name), " ")
	if name == "" {
		name = user
	}
	if len(name) > maxDisplayName || !printable(name) {
		return "", fmt.Errorf("the name must be 1 to %d bytes of text", maxDisplayName)
	}
	if strings.ContainsAny(name, "@<>") {
		return "", fmt.Errorf("the name is shown with your account's address; it may not hold an address (no @, < or >)")
	}
	return (&mail.Address{Name: name, Address: addr}).String(), nil
}

// controlGroup reports the groups of control messages and junk, which a
// reader never posts to.
func controlGroup(g string) bool {
	g = strings.ToLower(g)
	return g == "control" || strings.HasPrefix(g, "control.") || g == "junk"
}

// localPart makes a user name into an address's local part: letters,
// digits and ".-_+", anything else as "_".
func localPart(user string) string {
	b := []byte(user)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".-_+", c) >= 0) {
			b[i] = '_'
		}
	}
	s := strings.Trim(string(b), ".")
	if s == "" {
		return "reader"
	}
	return s
}

// bodyText is the body as CRLF lines, checked, in format=flowed (RFC
// 3676) so that readers that understand it re-flow the text: a line
// longer than flowWidth is wrapped at spaces into lines that end in a
// space (soft breaks), its quote marks repeated on each; the other lines
// lose their trailing spaces (which would make them soft), except the
// signature separator "-- "; a line starting with a space or "From " is
// space-stuffed. Only a word longer than maxPostLine bytes cannot be
// sent.
func bodyText(body string) (string, error) {
	if len(body) > maxPostBody {
		return "", fmt.Errorf("the text is over %d bytes", maxPostBody)
	}
	if !utf8.ValidString(body) {
		return "", fmt.Errorf("the text is not UTF-8")
	}
	body = strings.ReplaceAll(body, "\r\n", "\n")
	body = strings.TrimRight(body, "\n")
	if strings.TrimSpace(body) == "" {
		return "", fmt.Errorf("the text is empty")
	}
	var out []string
	for i, l := range strings.Split(body, "\n") {
		if l != "-- " {
			l = strings.TrimRight(l, " \t\r")
		}
		if strings.ContainsFunc(l, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }) {
			return "", fmt.Errorf("line %d holds a control character", i+1)
		}
		for _, w := range flowLine(l) {
			if len(w) > maxPostLine {
				return "", fmt.Errorf("line %d has a word over %d bytes", i+1, maxPostLine)
			}
			out = append(out, w)
		}
	}
	return strings.Join(out, "\r\n") + "\r\n", nil
}

// flowWidth is where flowLine wraps (RFC 3676 §4.2: 78 at most).
const flowWidth = 76

// flowLine is one line of text as format=flowed lines: its quote marks
// (">" runs) kept on each, wrapped at spaces when longer than flowWidth
// characters, every piece but the last ending in the space it was cut at,
// and space-stuffed where needed.
func flowLine(l string) []string {
	quote := ""
	for strings.HasPrefix(l, ">") {
		quote += ">"
		l = l[1:]
	}
	if quote != "" {
		l = strings.TrimPrefix(l, " ") // the space after the marks is stuffing, added back below
	}
	stuff := func(s string) string {
		if quote != "" && s == "" {
			return quote // no stuffing space: it would make the line soft
		}
		if quote != "" || strings.HasPrefix(s, " ") || strings.HasPrefix(s, "From ") || strings.HasPrefix(s, ">") {
			return quote + " " + s
		}
		return s
	}
	var out []string
	for utf8.RuneCountInString(l) > flowWidth {
		cut := -1
		n := 0
		for i, r := range l {
			if n > flowWidth {
				break
			}
			if r == ' ' && i > 0 {
				cut = i
			}
			n++
		}
		if cut < 0 { // a long word: cut at the next space
			cut = strings.IndexByte(l, ' ')
			if cut < 0 {
				break
			}
		}
		out = append(out, stuff(l[:cut+1]))
		l = l[cut+1:]
	}
	return append(out, stuff(l))
}

// printable reports text without control characters.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

// quoteReply is the text a reply form starts with: an attribution line and
// the parent's text quoted, its signature left out.
func quoteReply(d *Display) string {
	var b strings.Builder
	name := displayName(d.From)
	if name == "" {
		name = "Someone"
	}
	b.WriteString(name + " wrote:\n")
	n := 0
	for _, p := range d.Parts {
		for _, l := range p.Lines {
			if l.Sig || n >= 200 {
				continue
			}
			if strings.HasPrefix(l.Text, ">") {
				b.WriteString(">" + l.Text + "\n")
			} else {
				b.WriteString("> " + l.Text + "\n")
			}
			n++
		}
	}
	return b.String() + "\n"
}

// replySubject is "Re: " and the parent's subject, without stacking "Re:".
func replySubject(s string) string {
	return "Re: " + baseSubject(s)
}
