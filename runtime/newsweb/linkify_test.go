package newsweb

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

func TestLinkify(t *testing.T) {
	link := func(u string) segment { return segment{Text: u, URL: u} }
	text := func(s string) segment { return segment{Text: s} }
	tests := []struct {
		name string
		in   string
		want []segment
	}{
		{"no link", "plain text", []segment{text("plain text")}},
		{"empty", "", nil},
		{"sentence end", "see https://x.example/a.", []segment{text("see "), link("https://x.example/a"), text(".")}},
		{"angle brackets", "<http://x.example/b?c=d&e=f>", []segment{text("<"), link("http://x.example/b?c=d&e=f"), text(">")}},
		{"parenthesised", "(see http://x.example/wiki/A_(b))", []segment{text("(see "), link("http://x.example/wiki/A_(b)"), text(")")}},
		{"two", "http://a.example and HTTPS://b.example/", []segment{link("http://a.example"), text(" and "), link("HTTPS://b.example/")}},
		{"javascript is text", "javascript:alert(1)//http", []segment{text("javascript:alert(1)//http")}},
		{"inside a word", "xhttp://a.example", []segment{text("xhttp://a.example")}},
		{"no host", "http:///path then http://ok.example", []segment{text("http:///path then "), link("http://ok.example")}},
		{"userinfo is text", "http://user:pw@evil.example/", []segment{text("http://user:pw@evil.example/")}},
		{"quote ends", `"http://q.example/x"`, []segment{text(`"`), link("http://q.example/x"), text(`"`)}},
		{"script stays text", `http://a.example/<script>`, []segment{link("http://a.example/"), text("<script>")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, linkify(tc.in)); d != "" {
				t.Errorf("linkify(%q) (-want +got):\n%s", tc.in, d)
			}
		})
	}
}

// A link in a body becomes an <a> with rel="nofollow noopener ugc" on the
// article page; markup around it stays text.
func TestArticleLinks(t *testing.T) {
	s := startSite(t)
	a := testArticle{id: "<link@t>", subject: "Links", body: "read https://go.dev/ref/spec. <b>not bold</b>\n"}
	if err := s.news.AddArticle(nntptest.Article{Raw: rawArticle("misc.test", a)}); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, s.url+"/articles/link@t")
	want := `read <a href="https://go.dev/ref/spec" rel="nofollow noopener ugc">https://go.dev/ref/spec</a>. &lt;b&gt;not bold&lt;/b&gt;`
	if !strings.Contains(body, want) {
		t.Errorf("article page lacks %s\n%s", want, body)
	}
}

// FuzzLinkify: the segments join back to the input, and every link is an
// http(s) URL free of space, quotes and angle brackets.
func FuzzLinkify(f *testing.F) {
	for _, s := range []string{"see https://x.example/a.", "<http://a.example/(b)>", "HTTP://A", "http://u@h/", "javascript:http://"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var b strings.Builder
		for _, seg := range linkify(in) {
			b.WriteString(seg.Text)
			if seg.URL == "" {
				continue
			}
			if seg.URL != seg.Text || !linkable(seg.URL) || strings.ContainsAny(seg.URL, " \t\n\"<>") {
				t.Fatalf("bad link %q in %q", seg.URL, in)
			}
		}
		if b.String() != in {
			t.Fatalf("segments join to %q, want %q", b.String(), in)
		}
	})
}
