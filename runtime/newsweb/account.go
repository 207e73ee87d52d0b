package newsweb

import (
	"bytes"
	"html/template"
	"net/http"
)

// The header's account control. Pages are rendered once for everybody and
// kept (the page cache, browsers, proxies), so they carry the anonymous
// control, a "Log in" link. A request with a session gets the page with
// that link replaced by who is logged in and a "Log out" button (a POST
// with the reader's CSRF token); such a copy is made for the request and
// never kept (no-store). Pages of a site with accounts vary by Cookie, so
// that a browser does not show a page it kept from before a login (or a
// logout) in place of the page as it is now.

// loginLink is the anonymous account control, as the head template
// renders it.
const loginLink = `<a class="account" href="/login">Log in</a>`

var (
	loginLinkBytes = []byte(loginLink)
	accountForm    = template.Must(template.New("account").Parse(
		`<form class="account" method="post" action="/logout"><input type="hidden" name="csrf" value="{{.CSRF}}"><span class="user">{{.User}}</span> · <button type="submit">Log out</button></form>`))
	varyCookie = []string{"Accept-Encoding, Cookie"}
)

// accounts says whether pages carry the account control: posting is on
// with a users file.
func (s *Server) accounts() bool { return s.posting != nil && s.posting.hasUsers() }

// withAccount is resp, an HTML page, for r: resp itself unless r has a
// session and resp has the anonymous control, else a copy naming the
// reader.
func (s *Server) withAccount(r *http.Request, resp *response) *response {
	if len(r.Header["Cookie"]) == 0 {
		return resp
	}
	i := bytes.Index(resp.body, loginLinkBytes)
	if i < 0 {
		return resp
	}
	user, ok := s.posting.sessionOf(r)
	if !ok {
		return resp
	}
	var form bytes.Buffer
	if err := accountForm.Execute(&form, struct{ User, CSRF string }{user, s.posting.csrf(user)}); err != nil {
		return resp
	}
	body := make([]byte, 0, len(resp.body)+form.Len())
	body = append(append(append(body, resp.body[:i]...), form.Bytes()...), resp.body[i+len(loginLink):]...)
	return &response{status: resp.status, ctype: resp.ctype, cache: cacheError, body: body,
		location: resp.location, cookie: resp.cookie, retryAfter: resp.retryAfter, attachment: resp.attachment}
}
