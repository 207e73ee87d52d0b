package newsweb

// Composing an article to post from what a reader typed (RFC 5536,
// RFC 5537 §3.4.4 for References): the fields are checked and bounded,
// the subject and display name MIME-encoded when not ASCII (RFC 2047), the
// body made CRLF text/plain UTF-8 with no line over 998 bytes (RFC 5322
// §2.1.1), and the article gets a Message-ID, a Date, and for a reply
// References (the parent's, then the parent; trimmed to the first and the
// last maxRefs-1 when long) and In-Reply-To.

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
	maxRefs           = 21 // References kept: the first and the last 20
)

// errCompose marks a post that cannot be made as given (a 400 with its text).
var errCompose = errors.New("cannot post")

// draft is what a reader sends: the JSON API's body, or the form's fields.
type draft struct {
	Newsgroups []string `json:"newsgroups"`
	Subject    string   `json:"subject"`
	Body       string   `json:"body"`
	References string   `json:"references,omitempty"` // the parent's message-id
	From       string   `json:"from,omitempty"`       // "Name <addr>" or a name; default from the user
}

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
// new thread).
func compose(d draft, user, domain, id string, now time.Time, par *parent) (composed, error) {
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
	}
	subject := strings.Join(strings.Fields(d.Subject), " ")
	if subject == "" || len(subject) > maxPostSubject || !printable(subject) {
		return fail("the subject must be 1 to %d bytes of text", maxPostSubject)
	}
	from, err := fromField(d.From, user, domain)
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
	field("Content-Type", "text/plain; charset=utf-8")
	field("Content-Transfer-Encoding", "8bit")
	field("User-Agent", "newsweb")
	h.WriteString("\r\n")
	h.WriteString(body)
	return composed{ID: id, Raw: []byte(h.String())}, nil
}

// fromField is the From header: the reader's own when given (an address,
// or a display name for the user's address), else the user at domain.
func fromField(given, user, domain string) (string, error) {
	local := localPart(user)
	addr := local + "@" + domain
	given = strings.TrimSpace(given)
	if given == "" {
		return (&mail.Address{Name: user, Address: addr}).String(), nil
	}
	if len(given) > 200 || !printable(given) {
		return "", fmt.Errorf("the From name is too long or not text")
	}
	if a, err := mail.ParseAddress(given); err == nil {
		return a.String(), nil
	}
	return (&mail.Address{Name: given, Address: addr}).String(), nil
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

// bodyText is the body as CRLF lines, checked.
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
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, " \t\r")
		if len(l) > maxPostLine {
			return "", fmt.Errorf("line %d is over %d bytes", i+1, maxPostLine)
		}
		if strings.ContainsFunc(l, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }) {
			return "", fmt.Errorf("line %d holds a control character", i+1)
		}
		lines[i] = l
	}
	return strings.Join(lines, "\r\n") + "\r\n", nil
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
