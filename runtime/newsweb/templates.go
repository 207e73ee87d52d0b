package newsweb

import (
	"crypto/sha256"
	"encoding/base64"
	"html/template"
)

// css is the whole style sheet, inlined in every page. The
// Content-Security-Policy allows exactly this text by its hash, and nothing
// else: no script, no other style, no frames.
const css = `:root{color-scheme:light dark;--fg:#1c1c1e;--muted:#6b6b70;--bg:#fff;--line:#e3e3e8;--soft:#f5f5f7;--accent:#0b57d0;--visited:#6a3fa0;--q1:#2f6f3a;--q2:#7b3f98;--q3:#a23b2a}
@media (prefers-color-scheme:dark){:root{--fg:#e8e8ed;--muted:#a1a1a8;--bg:#151517;--line:#2e2e32;--soft:#1f1f22;--accent:#8ab4f8;--visited:#c5a3f5;--q1:#8fd19e;--q2:#d7a6f0;--q3:#f2a38f}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header.top{border-bottom:1px solid var(--line);padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.2rem 1rem;align-items:baseline}
header.top a.home{font-weight:700;color:var(--fg);text-decoration:none}
header.top .crumbs{color:var(--muted);font-size:.9rem;overflow-wrap:anywhere}
header.top .account{margin-left:auto;font-size:.9rem}
form.account{display:flex;gap:.3em;align-items:baseline;max-width:100%;white-space:nowrap}form.account .user{color:var(--muted);overflow:hidden;text-overflow:ellipsis;min-width:0}form.account button{font:inherit;color:var(--accent);background:none;border:0;padding:0;cursor:pointer}
main{max-width:62rem;margin:0 auto;padding:1rem 1rem 3rem}
a{color:var(--accent);text-decoration:none}
a.thread:visited,a.hit:visited{color:var(--visited)}
a:hover{text-decoration:underline}
h1{font-size:1.35rem;margin:.3rem 0 .8rem;overflow-wrap:anywhere}
p.lead{color:var(--muted);margin:.2rem 0 1rem}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:.8rem;font-weight:600;color:var(--muted);text-transform:uppercase;letter-spacing:.03em}
td.subject{overflow-wrap:break-word;word-break:normal}
span.new{font-size:.8rem;font-weight:650;color:var(--accent);white-space:nowrap}form.markread{margin:.4rem 0}
ol.hits{list-style:none;margin:0;padding:0}ol.hits>li{border-bottom:1px solid var(--line);padding:.4rem 0}h2.thread{font-size:1rem;margin:.2rem 0;overflow-wrap:break-word}ul.posts{list-style:none;margin:0;padding-left:1rem}ul.posts li{margin:.2rem 0}
.snippet{color:var(--muted);font-size:.88rem;overflow-wrap:anywhere}.snippet mark{color:var(--fg);background:var(--soft);font-weight:650}
.muted{color:var(--muted);font-size:.9rem}
.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.unit{display:none}
nav.pages{display:flex;gap:1rem;align-items:center;margin:1rem 0}
ul.tree{list-style:none;margin:0;padding-left:1.2rem;border-left:1px solid var(--line)}
ul.tree ul.tree ul.tree ul.tree ul.tree ul.tree ul.tree{padding-left:0;border-left:0}
ul.tree.root{padding-left:0;border-left:0}
ul.tree li{margin:.2rem 0}
.node{overflow-wrap:anywhere}
.node .who,.node .when,.node .depth,.node .subj{color:var(--muted);font-size:.88rem;margin-left:.4rem}
.node .subj{font-style:italic}
nav.threadnav .current{font-weight:650}
.node.missing{color:var(--muted);font-style:italic}
.node.current{font-weight:650}
dl.headers{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;margin:0 0 1rem;padding:.6rem .8rem;background:var(--soft);border-radius:6px}
dl.headers dt{color:var(--muted);font-size:.88rem}
dl.headers dd{margin:0;overflow-wrap:anywhere}
.body{font:14px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.blk{white-space:pre-wrap;overflow-wrap:anywhere;margin:0}
.blk.q1,.blk.q2,.blk.q3{border-left:3px solid currentColor;padding-left:.6rem;margin:.2rem 0}
.q1{color:var(--q1)}.q2{color:var(--q2)}.q3{color:var(--q3)}
.blk.sig{color:var(--muted)}
.note{color:var(--muted);font-style:italic;margin:.4rem 0}
ul.attachments{color:var(--muted)}
.error{border-left:4px solid var(--q3);padding:.4rem 1rem}
footer{color:var(--muted);font-size:.8rem;text-align:center;padding:2rem 0}
form.filter{display:flex;gap:.4rem;margin:.4rem 0}
form.filter input{flex:1;min-width:0;font:inherit;padding:.3rem .5rem;color:var(--fg);background:var(--bg);border:1px solid var(--line);border-radius:4px}
nav.hier{display:flex;flex-wrap:wrap;gap:.2rem .9rem;margin:.4rem 0 1rem;overflow-wrap:anywhere}
form.compose{display:grid;gap:.8rem;max-width:48rem}
form.compose label{display:grid;gap:.2rem;color:var(--muted);font-size:.9rem}
form.compose input,form.compose textarea{width:100%;font:inherit;color:var(--fg);background:var(--bg);border:1px solid var(--line);border-radius:4px;padding:.4rem}
form.compose textarea{font:14px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
form.compose button{justify-self:start;font:inherit;padding:.4rem 1.2rem}
.vh{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
a.skip{position:absolute;left:-999px}
.sep{white-space:pre}
a.skip:focus{left:1rem;top:.5rem;background:var(--bg);padding:.3rem .6rem;z-index:1}
nav.threadnav{display:flex;flex-wrap:wrap;gap:.4rem 1rem;margin:.6rem 0}
details.outline{margin:0 0 1rem}
details.outline>summary,details.quote>summary,details.allheaders>summary{cursor:pointer;color:var(--muted);font-size:.9rem}
article.post{border-top:1px solid var(--line);padding:.8rem 0 .6rem;min-width:0}
.d1{margin-left:1rem}.d2{margin-left:2rem}.d3{margin-left:3rem}.d4{margin-left:4rem}.d5{margin-left:5rem}
.d1,.d2,.d3,.d4,.d5{padding-left:.6rem;border-left:2px solid var(--line)}
.ph{display:flex;flex-wrap:wrap;gap:0 .6rem;align-items:baseline}
.ph .from{font-weight:600;overflow-wrap:anywhere}
.ph .when,.ph .depth{color:var(--muted);font-size:.85rem}
.psubj{flex-basis:100%;font-size:.95rem;overflow-wrap:anywhere}
.pa{display:flex;flex-wrap:wrap;gap:0 1rem;font-size:.85rem;padding:.3rem 0 0;text-align:left}
details.quote{margin:.2rem 0}
@media (max-width:40rem){
form.filter{flex-wrap:wrap}
form.advanced input[name=q],form.advanced input[name=author]{flex-basis:100%}
table.threads td.num::before{content:"· "}
.unit{display:inline}
main{padding:.6rem .6rem 2rem}
header.top{padding:.5rem .6rem}
table.threads thead,table.groups thead{display:none}
table.threads tr,table.groups tr{display:block;border-bottom:1px solid var(--line);padding:.4rem 0}
table.threads td,table.groups td{display:inline;border:0;padding:0 .4rem 0 0}
table.threads td.subject,table.groups td.name{display:block;font-size:1.02rem}
table.threads td:not(.subject),table.groups td:not(.name){color:var(--muted);font-size:.85rem}
table.threads td.num,table.groups td.num{white-space:nowrap}
ul.tree{padding-left:.7rem}
ul.tree ul.tree ul.tree ul.tree{padding-left:0;border-left:0}
.d1{margin-left:.5rem}.d2{margin-left:1rem}.d3,.d4,.d5{margin-left:1.5rem}
.body{font-size:13px}
}`

// cspStyleHash is the CSP source for css ('sha256-…').
var cspStyleHash = func() string {
	sum := sha256.Sum256([]byte(css))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

// contentSecurityPolicy forbids scripts, plugins, frames and any style but
// ours; pages load nothing from anywhere.
var contentSecurityPolicy = "default-src 'none'; style-src " + cspStyleHash +
	"; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const pageTemplates = `
{{define "head"}}<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>{{.Title}} · {{.Site}}</title>
<style>{{.CSS}}</style>
{{with .FeedLink}}<link rel="alternate" type="application/atom+xml" title="Atom feed" href="{{.}}">{{end}}
</head>
<body>
<a class="skip" href="#main">Skip to the content</a>
<header class="top"><a class="home" href="/">{{.Site}}</a>{{with .Group}}<span class="crumbs">› <a href="{{groupURL .}}">{{.}}</a></span>{{end}}{{if .Account}}<a class="account" href="/login">Log in</a>{{end}}</header>
<main id="main">
{{end}}

{{define "foot"}}</main>
<footer>newsweb · server-rendered, no scripts</footer>
</body>
</html>
{{end}}

{{define "search"}}{{template "head" .}}
<h1>Search{{with .Groups}} in {{.}}{{end}}</h1>
<form class="filter advanced" method="get" action="/search">{{with .Groups}}<input type="hidden" name="group" value="{{.}}">{{end}}<input type="search" name="q" value="{{.Query}}" placeholder="{{if .Bodies}}Words or &#34;a phrase&#34;{{else}}Subject or author{{end}}" aria-label="Subject, author{{if .Bodies}} or text{{end}}" maxlength="200"><input type="search" name="author" value="{{.Author}}" placeholder="Author" aria-label="Author" maxlength="200"><input type="date" name="since" value="{{.Since}}" aria-label="From date"><input type="date" name="until" value="{{.Until}}" aria-label="To date"><button type="submit">Search</button></form>
{{if .Partial}}<p class="note">{{if .IndexedHigh}}Searched articles {{.IndexedLow}}–{{.IndexedHigh}} of {{.Groups}} ({{.Indexed}} articles); {{if .Older}}older ones are still being indexed{{else}}new ones are being added{{end}}.{{else}}{{.Groups}} is being indexed: no article yet.{{end}}</p>{{end}}
{{if and (not .Groups) (or .Query .Author .Since .Until)}}<p class="note">{{if .IndexedGroups}}This searched the {{.IndexedGroups}} group{{if ne .IndexedGroups 1}}s{{end}} indexed so far.{{else}}No group is indexed yet.{{end}} A group is indexed when it is first searched, and the groups read here when all groups are: search from a group's page to include another.</p>{{end}}
{{if and .Bodies (lt .BodiesIndexed .Indexed)}}<p class="note">Article text indexed for {{.BodiesIndexed}} of {{.Indexed}} articles so far; subjects and authors for all.</p>{{end}}
{{if or .Query .Author .Since .Until}}<p class="lead">{{if .Approx}}At least {{end}}{{.Total}} article{{if ne .Total 1}}s{{end}} found{{if gt .Pager.Pages 1}}, page {{.Pager.Page}} of {{.Pager.Pages}}{{end}}.</p>
<ol class="hits">
{{range .Threads}}<li><h2 class="thread">{{.Subject}}{{if not $.Groups}} <span class="muted">in {{.Group}}</span>{{end}}</h2>
<ul class="posts">{{range .Hits}}<li><a class="hit" href="{{.Link}}">{{.From}}</a> <span class="muted">{{.DateText}}</span>{{if ne .Subject .Thread}} <span class="muted">· {{.Subject}}</span>{{end}}{{with .Snippet}}<div class="snippet">{{range .}}{{if .Match}}<mark>{{.Text}}</mark>{{else}}{{.Text}}{{end}}{{end}}</div>{{end}}</li>
{{end}}</ul></li>
{{else}}<li class="muted">Nothing found.</li>
{{end}}</ol>
{{template "pager" .Pager}}{{end}}
{{template "foot" .}}{{end}}

{{define "groups"}}{{template "head" .}}
<h1>Newsgroups{{with .Hierarchy}} in {{.}}.*{{end}}</h1>
{{if .SearchOn}}<form class="filter searchbox" method="get" action="/search" role="search"><input type="search" name="q" placeholder="Search articles" aria-label="Search articles" maxlength="200"><button type="submit">Search</button></form>{{end}}
<form class="filter" method="get" action="/">{{with .Hierarchy}}<input type="hidden" name="h" value="{{.}}">{{end}}<input type="search" name="q" value="{{.Query}}" placeholder="Filter groups" aria-label="Filter groups" maxlength="200"><button type="submit">Filter</button></form>
<p class="lead">{{if or .Query .Hierarchy}}{{.Matched}} of {{end}}{{.Total}} group{{if ne .Total 1}}s{{end}} from {{.ServerCount}} server{{if ne .ServerCount 1}}s{{end}}{{with .Missing}}; {{.}} did not answer{{end}}.{{if or .Query .Hierarchy}} <a href="/">All groups</a>{{end}}</p>
{{with .Hierarchies}}<nav class="hier" aria-label="Hierarchies">{{range .}}<a href="{{.Link}}">{{.Name}}.*</a> <span class="muted">{{.Groups}}</span> {{end}}</nav>{{end}}
<table class="groups">
<thead><tr><th>Group</th><th>Description</th><th class="num">Articles</th></tr></thead>
<tbody>
{{range .Groups}}<tr><td class="name"><a class="group" href="{{groupURL .Name}}">{{.Name}}</a></td><td class="desc">{{.Description}}</td><td class="num">{{.Count}}<span class="unit"> article{{if ne .Count 1}}s{{end}}</span></td></tr>
{{else}}<tr><td colspan="3" class="muted">{{if or $.Query $.Hierarchy}}No group matches.{{else}}The servers list no groups.{{end}}</td></tr>
{{end}}</tbody>
</table>
{{template "pager" .Pager}}
{{template "foot" .}}{{end}}

{{define "group"}}{{template "head" .}}
<h1>{{.Group}}</h1>
{{with .Stale}}<p class="note stale">{{.}}</p>{{end}}
<p class="lead">{{.Articles}} article{{if ne .Articles 1}}s{{end}} in {{.ThreadCount}} thread{{if ne .ThreadCount 1}}s{{end}}{{with .Others}} ({{.}} of them from other servers){{end}}{{with .Stats}}, {{.Count}} on the server{{end}}{{with .Newest}}, {{.}}{{end}}.</p>
{{if .SearchOn}}<form class="filter searchbox" method="get" action="/search" role="search"><input type="hidden" name="group" value="{{.Group}}"><input type="search" name="q" placeholder="Search {{.Group}}" aria-label="Search this group" maxlength="200"><button type="submit">Search</button></form>{{end}}
<nav class="threadnav" aria-label="Group">{{with .NewThread}}<a class="new" href="{{.}}">New thread</a>{{end}}{{with .Search}}<a class="search" href="{{.}}">Search this group</a>{{end}}<a class="feed" href="{{.Feed}}">Atom feed</a></nav>
{{with .MarkRead}}<form class="markread" method="post" action="{{.}}"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button type="submit">Mark group read</button></form>{{end}}
<table class="threads">
<thead><tr><th>Subject</th><th>From</th><th class="num">Articles</th><th class="num">Latest</th></tr></thead>
<tbody>
{{range .Threads}}<tr><td class="subject"><a class="thread" href="{{.Link}}">{{.Subject}}</a>{{if .New}} <span class="new">{{.New}} new</span>{{end}}</td><td class="from">{{.From}}</td><td class="num">{{.Count}}<span class="unit"> article{{if ne .Count 1}}s{{end}}</span></td><td class="num">{{.LatestText}}</td></tr>
{{else}}<tr><td colspan="4" class="muted">No articles.</td></tr>
{{end}}</tbody>
</table>
{{template "pager" .Pager}}
{{template "foot" .}}{{end}}

{{define "pager"}}{{if or (gt .Pages 1) .Prev .Next}}<nav class="pages" aria-label="Pages">
{{if .Prev}}<a rel="prev" href="{{.Prev}}">{{or .PrevLabel "← Newer"}}</a>{{end}}
<span class="muted">Page {{.Page}} of {{.Pages}}</span>
{{if .Next}}<a rel="next" href="{{.Next}}">{{or .NextLabel "Older →"}}</a>{{end}}
</nav>{{end}}{{end}}

{{define "thread"}}{{template "head" .}}
<h1>{{.Subject}}</h1>
{{with .Stale}}<p class="note stale">{{.}}</p>{{end}}
<p class="lead">{{.Count}} article{{if ne .Count 1}}s{{end}} in this thread.</p>
<nav class="threadnav" aria-label="Thread">{{if .ByDate}}<a class="threaded" href="{{.Threaded}}">Threaded</a><span class="current">By date</span>{{else}}<span class="current">Threaded</span><a class="bydate" href="{{.DateView}}">By date</a>{{end}}{{with .FirstUnread}}<a class="unread" href="{{.}}">First unread ({{$.Unread}} new)</a>{{end}}{{with .Newest}}<a class="newest" href="{{.}}">Newest post</a>{{end}}{{with .Newer}}<a class="newer" href="{{.}}">← Newer thread</a>{{end}}{{with .Older}}<a class="older" href="{{.}}">Older thread →</a>{{end}}<a class="feed" href="{{.Feed}}">Atom feed</a><a class="mbox" href="{{.Mbox}}">mbox</a></nav>
<details class="outline"{{if .OutlineOpen}} open{{end}}><summary>Outline of the {{.Count}} post{{if ne .Count 1}}s{{end}}</summary>
<ul class="tree root">{{template "node" .Root}}</ul>
</details>
<section class="conversation">
{{range .Posts}}{{template "post" .}}{{end}}
</section>
{{template "pager" .Pager}}
{{template "foot" .}}{{end}}

{{define "post"}}<article class="post d{{.Indent}}" id="{{.Anchor}}" data-post="{{.ID}}">
{{if .Missing}}<p class="note">(article not available)</p>{{else}}<h2 class="vh">{{.From}}, {{.Date}}</h2><header class="ph"><span class="from">{{.From}}</span><span class="when">{{.Date}}</span>{{if gt .Depth 2}}<span class="depth">depth {{.Depth}}</span>{{end}}{{with .Subject}}<span class="psubj">{{.}}</span>{{end}}</header>
{{with .Problem}}<p class="note">{{.}}</p>{{end}}<div class="body">
{{range .Parts}}{{with .Note}}<p class="note">{{.}}</p>{{end}}{{range .Blocks}}{{if .Fold}}<details class="quote"><summary>{{.Lines}} quoted lines</summary>{{template "blk" .}}</details>{{else}}{{template "blk" .}}{{end}}{{end}}
{{end}}</div>{{end}}
<footer class="pa">{{with .Reply}}<a class="reply" href="{{.}}">Reply</a>{{end}}{{with .Permalink}}<a class="permalink" href="{{.}}">Permalink</a>{{end}}{{with .Parent}}<a class="parent" href="#{{.}}">Parent</a>{{end}}{{with .Next}}<a class="next" href="#{{.}}">Next</a>{{end}}</footer>
</article>
{{end}}

{{define "blk"}}<div class="blk{{if .Quote}} q{{.Quote}}{{end}}{{if .Sig}} sig{{end}}">{{range .Segs}}{{if .URL}}<a href="{{.URL}}" rel="nofollow noopener ugc">{{.Text}}</a>{{else}}{{.Text}}{{end}}{{end}}</div>{{end}}

{{define "node"}}<li id="{{.Anchor}}"><div class="node{{if .Missing}} missing{{end}}{{if .Current}} current{{end}}" data-msgid="{{.ID}}">{{if .Missing}}(article not available){{else}}<a class="article" href="{{or .Jump .Link}}">{{.From}}</a><span class="when">{{.DateText}}</span>{{if gt .Depth 6}}<span class="depth">depth {{.Depth}}</span>{{end}}{{if .NewSubject}}<span class="subj">{{.Subject}}</span>{{end}}{{end}}</div>
{{if .Children}}<ul class="tree">{{range .Children}}{{template "node" .}}{{end}}</ul>{{end}}</li>
{{end}}

{{define "article"}}{{template "head" .}}
{{with .Article}}<h1>{{.Subject}}</h1>
<dl class="headers">
<dt>From</dt><dd class="from">{{.From}}</dd>
<dt>Date</dt><dd>{{.DateText}}</dd>
<dt>Newsgroups</dt><dd>{{range $i, $g := .Newsgroups}}{{if $i}}, {{end}}<a href="{{groupURL $g}}">{{$g}}</a>{{end}}</dd>
{{with .Organization}}<dt>Organization</dt><dd>{{.}}</dd>{{end}}
<dt>Message-ID</dt><dd class="muted">{{.MessageID}}</dd>
{{if .References}}<dt>In reply to</dt><dd><a href="{{articleURL (last .References) $.Group}}">{{last .References}}</a></dd>{{end}}
</dl>{{end}}
<nav class="threadnav" aria-label="Article">{{with .ThreadLink}}<a class="thread" href="{{.}}">View the whole thread</a>{{end}}{{with .Reply}}<a class="reply" href="{{.}}">Reply</a>{{end}}<a class="raw" href="{{.Raw}}">Original</a></nav>
{{with .Headers}}<details class="allheaders"><summary>All headers</summary><dl class="headers">{{range .}}<dt>{{.Name}}</dt><dd>{{.Value}}</dd>{{end}}</dl></details>{{end}}
{{with .Article.Problem}}<p class="note">{{.}}</p>{{end}}
<div class="body" id="body">
{{range .Parts}}{{with .Note}}<p class="note">{{.}}</p>{{end}}{{range .Blocks}}{{template "blk" .}}{{end}}
{{end}}</div>
{{if .Article.Truncated}}<p class="note">The article is long; only its beginning is shown.</p>{{end}}
{{with .Article.Attachments}}<h2 class="muted">Not shown</h2><ul class="attachments">{{range .}}<li>{{if .Name}}{{.Name}} · {{end}}{{.Type}} · {{.Size}} bytes</li>{{end}}</ul>{{end}}
{{template "foot" .}}{{end}}

{{define "compose"}}{{template "head" .}}
<h1>{{if .Reply}}Reply{{else}}New thread{{end}}</h1>
{{with .Error}}<div class="error"><p>{{.}}</p></div>{{end}}
<form class="compose" method="post" action="/post">
<input type="hidden" name="csrf" value="{{.CSRF}}">
{{with .References}}<input type="hidden" name="references" value="{{.}}">{{end}}
<label>Your name <input name="name" value="{{.Name}}" maxlength="100" autocomplete="name"></label>
<label>Newsgroups <input name="newsgroups" value="{{.Newsgroups}}" required maxlength="1000"></label>
<label>Subject <input name="subject" value="{{.Subject}}" required maxlength="300"></label>
<label>Text <textarea name="body" rows="16" required>{{.Body}}</textarea></label>
<p class="muted">Posting as {{.User}}, from {{.Address}}. Long lines are wrapped (format=flowed); a line <span class="sep">"-- "</span> starts your signature.</p>
<button type="submit">Post</button> <button type="submit" name="preview" value="1">Preview</button>
</form>
{{with .Preview}}<h2>Preview</h2><div class="body preview">{{range .}}{{with .Note}}<p class="note">{{.}}</p>{{end}}{{range .Blocks}}{{template "blk" .}}{{end}}{{end}}</div>{{end}}
{{template "foot" .}}{{end}}

{{define "login"}}{{template "head" .}}
{{if .User}}<h1>{{.Title}}</h1>
<p>You are logged in as <b class="user">{{.User}}</b>.</p>
<form class="compose" method="post" action="/logout"><input type="hidden" name="csrf" value="{{.CSRF}}"><button type="submit">Log out</button></form>
{{else}}<h1>Log in</h1>
{{with .Why}}<p class="lead">{{.}}</p>{{end}}
{{with .Error}}<div class="error"><p>{{.}}</p></div>{{end}}
<form class="compose" method="post" action="/login">
<input type="hidden" name="next" value="{{.Next}}">
<label>Name <input name="user" autocomplete="username" required></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<button type="submit">Log in</button>
</form>{{end}}
{{template "foot" .}}{{end}}

{{define "error"}}{{template "head" .}}
<h1>{{.Title}}</h1>
<div class="error"><p>{{.Message}}</p></div>
<p><a href="/">Back to the group list</a></p>
{{template "foot" .}}{{end}}
`

// templates holds every page, parsed once.
var templates = template.Must(template.New("pages").Funcs(template.FuncMap{
	"groupURL":   groupURL,
	"articleURL": articleURL,
	"fmtTime":    fmtTime,
	"last":       func(s []string) string { return s[len(s)-1] },
}).Parse(pageTemplates))
