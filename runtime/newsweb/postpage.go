package newsweb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// The HTML side of posting: the compose form (a new thread in a group, or
// a reply quoting its parent), its submission, and the login form. They
// work without script; see posting.go for identity and CSRF.

type composeView struct {
	base
	User       string
	Name       string // the display name
	Address    string // the account's From address
	CSRF       string
	Newsgroups string
	Subject    string
	Body       string
	References string
	Reply      bool
	Error      string
	// Preview is the text as it will be shown, when the reader asked
	// for a preview.
	Preview []partView
}

type loginView struct {
	base
	Next  string
	Error string
	// Why says what the login is for, when the reader was sent here.
	Why string
	// User is the reader logged in already; CSRF the token of the form
	// that logs them out.
	User string
	CSRF string
}

// replyURL is the reply form for id in group.
func replyURL(group, id string) string {
	return "/post?group=" + url.QueryEscape(group) + "&re=" + url.QueryEscape(stripID(id))
}

// newThreadURL is the form for a new thread in group.
func newThreadURL(group string) string { return "/post?group=" + url.QueryEscape(group) }

// localPath keeps next a path on this site (no open redirect), read as a
// browser reads a Location: leading and trailing controls and spaces are
// stripped and tabs and newlines anywhere removed (so "/\t/evil" is
// "//evil", another host). What is left must be a path: it starts with one
// "/" not followed by another or by a backslash (which browsers read as a
// slash), and holds no space, control, backslash or non-ASCII byte; else
// next is "/".
func localPath(next string) string {
	next = strings.TrimFunc(next, func(r rune) bool { return r <= ' ' })
	next = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, next)
	if len(next) > maxURL || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return "/"
		}
	}
	return next
}

// needLogin answers a form request without identity: the login page when
// there are users, else 401.
func (s *Server) needLogin(r *http.Request) *response {
	if s.posting.hasUsers() {
		return &response{status: http.StatusSeeOther, ctype: "text/plain; charset=utf-8", cache: cacheError,
			location: "/login?next=" + url.QueryEscape(r.URL.RequestURI())}
	}
	resp := s.errorPage(http.StatusUnauthorized, "Login needed", "Posting needs you to be logged in through this site's sign-on.")
	return resp
}

// composePage is GET /post?group=G[&re=ID].
func (s *Server) composePage(ctx context.Context, r *http.Request) (*response, error) {
	user, ok := s.posting.user(r)
	if !ok {
		return s.needLogin(r), nil
	}
	q := r.URL.Query()
	group := q.Get("group")
	if group != "" && proto.ValidGroupName(group) != nil {
		return nil, errBad
	}
	v := composeView{base: s.base("New thread", group), User: user, Name: user, Address: s.posting.address(user),
		CSRF: s.posting.csrf(user), Newsgroups: group}
	if re := q.Get("re"); re != "" {
		id := bracketID(re)
		if proto.ValidNNTPMessageID(id) != nil {
			return nil, errBad
		}
		a, err := s.fed.Article(ctx, id)
		if err != nil {
			return nil, err
		}
		d := decodeArticle(a.Raw)
		v.Title, v.Reply, v.References = "Reply", true, id
		v.Subject = replySubject(d.Subject)
		v.Body = quoteReply(d)
		if group == "" && len(d.Newsgroups) > 0 {
			v.Newsgroups = strings.Join(d.Newsgroups, ",")
		}
	}
	return s.render("compose", v, cacheError)
}

// submitPost is POST /post, the form's submission.
func (s *Server) submitPost(ctx context.Context, r *http.Request) (*response, error) {
	user, ok := s.posting.user(r)
	if !ok {
		return s.needLogin(r), nil
	}
	if err := r.ParseForm(); err != nil {
		return nil, errBad
	}
	f := r.PostForm
	if !sameOrigin(r) || !s.posting.csrfOK(user, f.Get("csrf")) {
		resp := s.errorPage(http.StatusForbidden, "Form expired", "The form did not come from this page; please go back, reload and post again.")
		return resp, nil
	}
	var groups []string
	for _, g := range strings.Split(f.Get("newsgroups"), ",") {
		if g = strings.TrimSpace(g); g != "" {
			groups = append(groups, g)
		}
	}
	d := draft{Newsgroups: groups, Subject: f.Get("subject"), Body: f.Get("body"), References: f.Get("references"), Name: f.Get("name")}
	if f.Get("preview") != "" {
		return s.preview(user, d, f.Get("newsgroups"))
	}
	id, err := s.post(ctx, r, user, d)
	var pe *postError
	if errors.As(err, &pe) {
		v := composeView{base: s.base("Not posted", ""), User: user, Name: d.Name, Address: s.posting.address(user),
			CSRF: s.posting.csrf(user), Newsgroups: f.Get("newsgroups"),
			Subject: d.Subject, Body: d.Body, References: d.References, Reply: d.References != "", Error: pe.msg}
		resp, err := s.render("compose", v, cacheError)
		if err != nil {
			return nil, err
		}
		resp.status, resp.retryAfter = pe.status, pe.retry
		return resp, nil
	}
	if err != nil {
		return nil, err
	}
	// To the new article in its thread (the caches have it already).
	return &response{status: http.StatusSeeOther, ctype: "text/plain; charset=utf-8", cache: cacheError,
		location: threadURL(groups[0], id) + "#" + postAnchor(id)}, nil
}

// preview answers the form with the article as it will be shown, or
// what is wrong with it; nothing is posted.
func (s *Server) preview(user string, d draft, newsgroups string) (*response, error) {
	p := s.posting
	v := composeView{base: s.base("Preview", ""), User: user, Name: d.Name, Address: p.address(user),
		CSRF: p.csrf(user), Newsgroups: newsgroups, Subject: d.Subject, Body: d.Body, References: d.References, Reply: d.References != ""}
	art, err := compose(d, user, p.opts.FromDomain, "<preview@"+p.opts.FromDomain+">", p.opts.Now(), nil, "")
	if err != nil {
		v.Error = strings.TrimPrefix(err.Error(), errCompose.Error()+": ")
	} else {
		for _, part := range decodeArticle(art.Raw).Parts {
			v.Preview = append(v.Preview, partView{Note: part.Note, Blocks: blocks(part.Lines)})
		}
	}
	return s.render("compose", v, cacheError)
}

// loginPage is GET /login: the login form, or for a reader logged in
// already, who they are and how to log out.
func (s *Server) loginPage(ctx context.Context, r *http.Request) (*response, error) {
	next := localPath(r.URL.Query().Get("next"))
	v := loginView{base: s.base("Log in", ""), Next: next, Why: loginWhy(next)}
	if user, ok := s.posting.sessionOf(r); ok {
		v.Title, v.User, v.CSRF = "Logged in", user, s.posting.csrf(user)
	}
	return s.render("login", v, cacheError)
}

// loginWhy is what a login that goes on to next is for: "" but for the
// posting forms.
func loginWhy(next string) string {
	if strings.HasPrefix(next, "/post") {
		return "Log in to post; the form opens after."
	}
	return ""
}

// login is POST /login: the login limits, a bcrypt check, then the
// session cookie.
func (s *Server) login(ctx context.Context, r *http.Request) (*response, error) {
	if err := r.ParseForm(); err != nil {
		return nil, errBad
	}
	next := localPath(r.PostForm.Get("next"))
	refuse := func(status int, msg string, retry time.Duration) (*response, error) {
		resp, err := s.render("login", loginView{base: s.base("Log in", ""), Next: next, Why: loginWhy(next), Error: msg}, cacheError)
		if err != nil {
			return nil, err
		}
		resp.status, resp.retryAfter = status, retry
		return resp, nil
	}
	if !sameOrigin(r) {
		return refuse(http.StatusForbidden, "Log in from this site's login page.", 0)
	}
	p := s.posting
	user, pass := r.PostForm.Get("user"), r.PostForm.Get("password")
	hash, known := p.account(user)
	addr := p.clientAddr(r)
	if wait := p.guard.blocked(addr, user, known, p.opts.Now()); wait > 0 {
		s.log.Warn("login refused: too many failures", "remote", addr, "user", user)
		return refuse(http.StatusTooManyRequests, fmt.Sprintf("Too many failed logins; please wait %v.", wait.Round(time.Second)), wait)
	}
	match, ok := p.guard.check(r, hash, pass)
	if !ok {
		return refuse(http.StatusServiceUnavailable, "The site is busy checking passwords; please try again in a moment.", time.Second)
	}
	if !match || !known {
		p.guard.fail(addr, user, known, p.opts.Now())
		s.log.Info("login failed", "remote", addr, "user", user)
		return refuse(http.StatusUnauthorized, "Wrong name or password.", 0)
	}
	now := p.opts.Now()
	exp := now.Add(p.opts.SessionLife)
	s.log.Info("login", "remote", addr, "user", user)
	return &response{status: http.StatusSeeOther, ctype: "text/plain; charset=utf-8", cache: cacheError, location: next,
		cookie: sessionCookieFor(r, p.session(user, now, exp), exp, int(p.opts.SessionLife/time.Second))}, nil
}

// sessionCookieFor is the session cookie with value until exp (maxAge
// seconds; negative to delete it): HttpOnly, SameSite=Lax (it goes with
// a link from another site, never with its forms), and Secure when the
// site is served over TLS, directly or behind a proxy that says so with
// X-Forwarded-Proto.
func sessionCookieFor(r *http.Request, value string, exp time.Time, maxAge int) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: value, Path: "/", Expires: exp, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(siteURL(r), "https:")}
}

// logout is POST /logout, the form on every page and on the login page:
// from this site (Origin) with the reader's token, it ends the session on
// the server (logouts.go), so that a copy of the cookie no longer logs
// in, and deletes the cookie. GET /logout changes nothing: it shows the
// form.
func (s *Server) logout(ctx context.Context, r *http.Request) (*response, error) {
	user, ok := s.posting.sessionOf(r)
	home := &response{status: http.StatusSeeOther, ctype: "text/plain; charset=utf-8", cache: cacheError, location: "/"}
	if r.Method == http.MethodGet {
		if !ok {
			return home, nil
		}
		return s.render("login", loginView{base: s.base("Log out", ""), User: user, CSRF: s.posting.csrf(user)}, cacheError)
	}
	if err := r.ParseForm(); err != nil {
		return nil, errBad
	}
	if !sameOrigin(r) || (ok && !s.posting.csrfOK(user, r.PostForm.Get("csrf"))) {
		return s.errorPage(http.StatusForbidden, "Form expired", "The form did not come from this page; please go back, reload and log out again."), nil
	}
	if ok {
		c, _ := r.Cookie(sessionCookie)
		if err := s.posting.endSession(c.Value); err != nil {
			// The session stays ended until the server restarts.
			s.log.Error("logout not saved: the session works again after a restart", "user", user, "err", err)
		}
		s.log.Info("logout", "remote", s.posting.clientAddr(r), "user", user)
	}
	home.cookie = sessionCookieFor(r, "", time.Unix(1, 0), -1)
	return home, nil
}
