package newsweb

// Posting from the web. A reader's identity comes from a
// trusted header set by a reverse proxy (SSO), or from a login against an
// htpasswd file of bcrypt hashes, kept in a signed session cookie. The
// JSON API (POST /api/articles) and the HTML forms (GET /post shows one,
// POST /post sends it) share one path: compose, rate limit, NNTP POST
// through Federated.Post (which updates the caches), answer.
//
// Cross-site requests: the forms carry a CSRF token, an HMAC of the user
// under the site's key, checked on POST; the JSON API takes only
// application/json (which a cross-site form cannot send without a CORS
// preflight that is never granted); both refuse an Origin header that is
// not this site's. The login form checks the Origin too.

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/newsflow/newsflow/proto"
)

// PostingOptions configure posting (NewPosting).
type PostingOptions struct {
	// TrustedHeader names a request header holding the user, set by a
	// reverse proxy in front (e.g. "X-Forwarded-User"). Only use it when
	// every request comes through that proxy.
	TrustedHeader string
	// ProxyHeaders trusts the X-Forwarded-For header for the client's
	// address (login limits, logs): set it only when every request comes
	// through a reverse proxy that sets the header.
	ProxyHeaders bool
	// Users is an htpasswd file of bcrypt hashes ("name:$2y$..." lines);
	// its users log in on /login.
	Users string
	// FromDomain is the domain of the From address and the Message-ID.
	FromDomain string
	// PathIdentity is newsweb's name in the Path and Injection-Info of
	// the posts it injects itself (ServerConfig.Inject); FromDomain when
	// empty.
	PathIdentity string
	// ComplaintsTo, when set, is the address Injection-Info names for
	// abuse reports (mail-complaints-to).
	ComplaintsTo string
	// RateLimit posts per RateWindow per user (DefaultPostRate and
	// DefaultPostWindow when 0).
	RateLimit  int
	RateWindow time.Duration
	// Key signs session cookies and CSRF tokens; random when nil (sessions
	// then end with the process; replicas need one shared key).
	Key []byte
	// SessionLife is how long a login lasts (DefaultSessionLife when 0).
	SessionLife time.Duration
	// LogoutsFile, when set, keeps the sessions logged out and not yet
	// expired across restarts (logouts.go); without it they are kept in
	// memory only.
	LogoutsFile string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Defaults of PostingOptions.
const (
	DefaultPostRate   = 20
	DefaultPostWindow = time.Hour
	// DefaultSessionLife is how long a login lasts.
	DefaultSessionLife = 30 * 24 * time.Hour
	sessionCookie      = "newsweb_session"
	maxPostRequest     = maxPostBody + 16<<10
	maxRateUsers       = 100_000
)

// Posting is the posting state of a Server (Options.Posting): the users,
// the signing key and the rate limit. Reload replaces the users.
type Posting struct {
	opts  PostingOptions
	rate  rateLimit
	guard *loginGuard
	// ended holds the sessions logged out before they expired.
	ended *logouts
	mu    sync.Mutex        // guards users
	users map[string][]byte // name -> bcrypt hash; nil without a users file
}

// account returns user's bcrypt hash.
func (p *Posting) account(user string) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.users[user]
	return h, ok
}

// hasUsers reports whether readers log in with the users file.
func (p *Posting) hasUsers() bool { return p.opts.Users != "" }

// Reload reads the users file again; on a mistake the users in use stay
// and the error says where (FILE line N). It returns how many users there
// are now.
func (p *Posting) Reload() (int, error) {
	if p.opts.Users == "" {
		return 0, nil
	}
	users, err := loadHtpasswd(p.opts.Users)
	if err != nil {
		return 0, err
	}
	p.guard.setDummy(users)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.users = users
	return len(users), nil
}

// NewPosting checks o and reads the users file.
func NewPosting(o PostingOptions) (*Posting, error) {
	if o.FromDomain == "" {
		return nil, errors.New("newsweb: posting needs from_domain")
	}
	if o.TrustedHeader == "" && o.Users == "" {
		return nil, errors.New("newsweb: posting needs trusted_header or users")
	}
	if o.PathIdentity == "" {
		o.PathIdentity = o.FromDomain
	}
	if err := CheckPathIdentity(o.PathIdentity); err != nil {
		return nil, fmt.Errorf("newsweb: %w", err)
	}
	if o.ComplaintsTo != "" {
		if err := CheckComplaintsTo(o.ComplaintsTo); err != nil {
			return nil, fmt.Errorf("newsweb: %w", err)
		}
	}
	if o.RateLimit <= 0 {
		o.RateLimit = DefaultPostRate
	}
	if o.RateWindow <= 0 {
		o.RateWindow = DefaultPostWindow
	}
	if o.SessionLife <= 0 {
		o.SessionLife = DefaultSessionLife
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(o.Key) == 0 {
		o.Key = make([]byte, 32)
		rand.Read(o.Key)
	}
	p := &Posting{opts: o, rate: rateLimit{n: o.RateLimit, window: o.RateWindow, posts: map[string][]time.Time{}}}
	if o.Users != "" {
		users, err := loadHtpasswd(o.Users)
		if err != nil {
			return nil, err
		}
		p.users = users
	}
	ended, err := loadLogouts(o.LogoutsFile, o.Now())
	if err != nil {
		return nil, err
	}
	p.ended = ended
	p.guard = newLoginGuard(p.users)
	return p, nil
}

// CheckUsersFile reads an htpasswd users file as NewPosting does and
// reports its first mistake.
func CheckUsersFile(path string) error {
	_, err := loadHtpasswd(path)
	return err
}

// loadHtpasswd reads name:bcrypt-hash lines; other hash kinds are refused
// (htpasswd -B makes bcrypt).
func loadHtpasswd(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("newsweb: users file: %w", err)
	}
	defer f.Close()
	users := map[string][]byte{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, hash, ok := strings.Cut(line, ":")
		if !ok || name == "" || !strings.HasPrefix(hash, "$2") {
			return nil, fmt.Errorf("newsweb: users file %s line %d: want name:bcrypt-hash (htpasswd -B)", path, n)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return nil, fmt.Errorf("newsweb: users file %s line %d: %w", path, n, err)
		}
		users[name] = []byte(hash)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("newsweb: users file: %w", err)
	}
	return users, nil
}

// mac is the site's HMAC of the parts.
func (p *Posting) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, p.opts.Key)
	for _, s := range parts {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// csrf is the form token for user.
func (p *Posting) csrf(user string) string {
	return base64.RawURLEncoding.EncodeToString(p.mac("csrf", user))
}

func (p *Posting) csrfOK(user, token string) bool {
	got, err := base64.RawURLEncoding.DecodeString(token)
	return err == nil && hmac.Equal(got, p.mac("csrf", user))
}

// session is the cookie value for user, issued at issued, until exp:
//
//	base64(user) . expiry (unix seconds) . issue time (unix nanoseconds) . base64(mac)
//
// The issue time lets a cutoff of the logouts file (logouts.go) end the
// sessions issued before it. A value of three parts, without the issue
// time, is one newsweb issued before it wrote the issue time; it is taken
// as issued at 0, before any cutoff.
func (p *Posting) session(user string, issued, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	i := strconv.FormatInt(issued.UnixNano(), 10)
	return base64.RawURLEncoding.EncodeToString([]byte(user)) + "." + e + "." + i + "." +
		base64.RawURLEncoding.EncodeToString(p.mac("session-issued", user, e, i))
}

// sessionParts splits a cookie value into its user, expiry and issue
// time, checking its signature.
func (p *Posting) sessionParts(v string) (user string, exp, issued int64, ok bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 && len(parts) != 4 {
		return "", 0, 0, false
	}
	u, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return "", 0, 0, false
	}
	// The two forms are signed under different labels, so that one is
	// never read as the other.
	var want []byte
	if len(parts) == 4 {
		want = p.mac("session-issued", string(u), parts[1], parts[2])
	} else {
		want = p.mac("session", string(u), parts[1])
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[len(parts)-1])
	if err != nil || !hmac.Equal(sig, want) {
		return "", 0, 0, false
	}
	exp, err = strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", 0, 0, false
	}
	if len(parts) == 4 {
		if issued, err = strconv.ParseInt(parts[2], 10, 64); err != nil {
			return "", 0, 0, false
		}
	}
	return string(u), exp, issued, true
}

// sessionUser checks a cookie value.
func (p *Posting) sessionUser(v string) (string, bool) {
	user, exp, issued, ok := p.sessionParts(v)
	if !ok || p.opts.Now().Unix() > exp {
		return "", false
	}
	if _, ok := p.account(user); !ok {
		return "", false // removed from the file since
	}
	if p.ended.has(v, issued) {
		return "", false // logged out, or issued before the cutoff
	}
	return user, true
}

// endSession records the session with cookie value v, which sessionUser
// accepted, as logged out until it expires.
func (p *Posting) endSession(v string) error {
	_, exp, _, ok := p.sessionParts(v)
	if !ok {
		return nil
	}
	return p.ended.end(v, time.Unix(exp, 0), p.opts.Now())
}

// sessionOf is the reader logged in by the request's session cookie.
func (p *Posting) sessionOf(r *http.Request) (string, bool) {
	if !p.hasUsers() {
		return "", false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false
	}
	return p.sessionUser(c.Value)
}

// user is the request's identity: the trusted header, else the session.
func (p *Posting) user(r *http.Request) (string, bool) {
	if h := p.opts.TrustedHeader; h != "" {
		if u := strings.TrimSpace(r.Header.Get(h)); u != "" && len(u) <= 100 && printable(u) {
			return u, true
		}
	}
	return p.sessionOf(r)
}

// sameOrigin refuses a request whose Origin names another site, and
// "null", which is what a browser sends for a form posted from a page with
// Referrer-Policy no-referrer or from a sandboxed frame: the site's own
// pages are served with Referrer-Policy same-origin, so their forms carry
// the site's origin. A request without Origin (not from a browser's form)
// passes; the CSRF token (forms) and the JSON content type (API) hold
// then.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// rateLimit allows n posts per window per user (a sliding window).
type rateLimit struct {
	n      int
	window time.Duration
	mu     sync.Mutex
	posts  map[string][]time.Time
}

// allow records a post by user at now if allowed; otherwise it says when
// the next is.
func (l *rateLimit) allow(user string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	recent := l.posts[user][:0:0]
	for _, t := range l.posts[user] {
		if now.Sub(t) < l.window {
			recent = append(recent, t)
		}
	}
	if len(recent) >= l.n {
		l.posts[user] = recent
		return false, recent[0].Add(l.window).Sub(now)
	}
	if len(l.posts) >= maxRateUsers {
		for u, ts := range l.posts {
			if len(ts) == 0 || now.Sub(ts[len(ts)-1]) >= l.window {
				delete(l.posts, u)
			}
		}
	}
	l.posts[user] = append(recent, now)
	return true, 0
}

// newMessageID is a fresh message-id at domain.
func newMessageID(domain string) string {
	b := make([]byte, 15)
	rand.Read(b)
	return "<" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)) + "@" + domain + ">"
}

// postError is a refused post: its status and the reader's message.
type postError struct {
	status int
	msg    string
	retry  time.Duration
}

func (e *postError) Error() string { return e.msg }

// address is user's From address.
func (p *Posting) address(user string) string { return localPart(user) + "@" + p.opts.FromDomain }

// trace is the value of traceHeader for a post by user from client:
// the site, the client's address, and the account as a keyed hash that
// only this site's key maps back to the account.
func (p *Posting) trace(user, client string) string {
	return injectionInfo(p.opts.FromDomain, postingHost(client), p.accountHash(user), "")
}

// accountHash is user as a keyed hash that only this site's key maps back to
// the account.
func (p *Posting) accountHash(user string) string {
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(p.mac("account", user)[:10]))
}

// injection is the injection fields of a post by user from client at now
// (compose.go's injectionFields).
func (p *Posting) injection(user, client string, now time.Time) string {
	return injectionFields(p.opts.PathIdentity, postingHost(client), p.accountHash(user), p.opts.ComplaintsTo, now)
}

// postingHost is the client's address as Injection-Info's posting-host
// (an IP address; a name from a proxy header kept to the characters of
// one, at most 64).
func postingHost(client string) string {
	if ip := net.ParseIP(client); ip != nil {
		return ip.String()
	}
	b := []byte(client)
	n := 0
	for _, c := range b {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == ':' {
			b[n] = c
			n++
		}
	}
	if n == 0 {
		return "unknown"
	}
	return string(b[:min(n, 64)])
}

// CheckPathIdentity refuses a path identity (RFC 5536 §3.1.5) that is not
// one: a name of letters, digits, ".", "-" and "_", 1 to 255 bytes.
func CheckPathIdentity(id string) error {
	if id == "" || len(id) > 255 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != "" {
		return fmt.Errorf("path identity %q: letters, digits, \".\", \"-\" and \"_\" only", id)
	}
	return nil
}

// CheckComplaintsTo refuses a mail-complaints-to that is not a plain
// address (local@domain, printable, no spaces, quotes or angle brackets).
func CheckComplaintsTo(addr string) error {
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Name != "" || a.Address != addr || len(addr) > 254 || strings.ContainsAny(addr, " \t\r\n\"<>();,\\") || !printable(addr) {
		return fmt.Errorf("complaints address %q: want a plain address, local@domain", addr)
	}
	return nil
}

// post is the one path of every post: compose, rate limit, POST.
func (s *Server) post(ctx context.Context, r *http.Request, user string, d draft) (string, error) {
	p := s.posting
	var par *parent
	if d.References != "" {
		id := bracketID(strings.TrimSpace(d.References))
		if proto.ValidNNTPMessageID(id) != nil {
			return "", &postError{status: http.StatusBadRequest, msg: "references: not a message-id"}
		}
		par = &parent{ID: id}
		if a, err := s.fed.Article(ctx, id); err == nil {
			par.References = decodeArticle(a.Raw).References
		}
	}
	now := p.opts.Now()
	id, client := newMessageID(p.opts.FromDomain), p.clientAddr(r)
	art, err := compose(d, user, p.opts.FromDomain, id, now, par, p.trace(user, client))
	if err != nil {
		return "", &postError{status: http.StatusBadRequest, msg: strings.TrimPrefix(err.Error(), errCompose.Error()+": ")}
	}
	var injected []byte
	if s.fed.injects() {
		// The same article, with newsweb's injection fields in place of
		// the trace.
		plain, err := compose(d, user, p.opts.FromDomain, id, now, par, "")
		if err != nil {
			return "", err
		}
		injected = append([]byte(p.injection(user, client, now)), plain.Raw...)
	}
	if ok, wait := p.rate.allow(user, now); !ok {
		return "", &postError{status: http.StatusTooManyRequests, retry: wait,
			msg: fmt.Sprintf("You have posted %d articles in %v; please wait %v.", p.rate.n, p.rate.window, wait.Round(time.Second))}
	}
	server, err := s.fed.Post(ctx, art.ID, art.Raw, injected)
	switch {
	case err == nil:
		s.log.Info("posted", "user", user, "id", art.ID, "server", server, "newsgroups", d.Newsgroups)
		return art.ID, nil
	case errors.Is(err, ErrPostRejected):
		// 441: the server's reason is the last quoted part of the error.
		return "", &postError{status: http.StatusUnprocessableEntity, msg: "The news server refused the article: " + serverReason(err)}
	case errors.Is(err, ErrPostingDenied):
		return "", &postError{status: http.StatusForbidden, msg: "No news server behind this site allows posting."}
	}
	return "", err
}

// serverReason is the text of the server's refusal in a Post error.
func serverReason(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": \""); i >= 0 {
		if r, err := strconv.Unquote(s[i+2:]); err == nil {
			return r
		}
	}
	return s
}

// draftError says what is wrong with the JSON of a post, in the API's
// terms: the field and the shape it needs, or the unknown field.
func draftError(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field == "newsgroups":
		return `The request is not the JSON of an article: newsgroups must be a list of group names, e.g. ["misc.test"].`
	case errors.As(err, &te) && te.Field != "":
		return "The request is not the JSON of an article: " + te.Field + " must be a string."
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "The request is not the JSON of an article: unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ") +
			": an article has newsgroups, subject, body, references and name."
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "The request is not JSON: " + strings.TrimPrefix(err.Error(), "json: ") + "."
	}
	return "The request is not the JSON of an article: an object of newsgroups, subject, body, references and name."
}

// apiPost is POST /api/articles.
func (s *Server) apiPost(ctx context.Context, r *http.Request) (*response, error) {
	user, ok := s.posting.user(r)
	if !ok {
		return jsonError(http.StatusUnauthorized, "Posting needs a login."), nil
	}
	ct := strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0])
	if !strings.EqualFold(ct, "application/json") || !sameOrigin(r) {
		return jsonError(http.StatusForbidden, "Send JSON from this site."), nil
	}
	var d draft
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return jsonError(http.StatusBadRequest, draftError(err)), nil
	}
	id, err := s.post(ctx, r, user, d)
	var pe *postError
	if errors.As(err, &pe) {
		resp := jsonError(pe.status, pe.msg)
		if pe.retry > 0 {
			resp.retryAfter = pe.retry
		}
		return resp, nil
	}
	if err != nil {
		return nil, err
	}
	resp, err := renderJSON(map[string]string{"message_id": id}, cacheError)
	if err != nil {
		return nil, err
	}
	resp.status = http.StatusCreated
	return resp, nil
}

func jsonError(status int, msg string) *response {
	body, _ := json.Marshal(map[string]any{"error": msg, "status": status})
	return &response{status: status, ctype: "application/json", cache: cacheError, body: append(body, '\n')}
}
