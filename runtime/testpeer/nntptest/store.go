package nntptest

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// A Group is a newsgroup the server carries.
type Group struct {
	Name        string
	Description string // for LIST NEWSGROUPS
	// Status is the LIST ACTIVE flag: "y" posting allowed (the default when
	// empty), "n" no posting, "m" moderated.
	Status string
	// Low and High, when non-zero, are reported by GROUP, LISTGROUP and LIST
	// ACTIVE instead of the water marks computed from the stored articles
	// (to mimic expired or not yet visible articles).
	Low, High int64
}

// An Article is one article in the store. Its bytes are opaque past the
// header section, so bodies may be yEnc or any binary that has no bare CR or
// LF outside line endings.
type Article struct {
	// MessageID is the article's message-id with angle brackets; "" means
	// the value of its Message-ID header field.
	MessageID string
	// Raw is the header section, an empty line and the body, not
	// dot-stuffed. Lines end in CRLF (wire form), or, if Raw holds no CR
	// at all, in LF (native form), which the store converts to CRLF.
	Raw []byte
	// Numbers gives the article's number in each group that holds it; nil
	// means the next number in each existing group its Newsgroups field names.
	Numbers map[string]int64
	// Arrived is when the server got the article, for NEWNEWS; zero means now.
	Arrived time.Time
}

// NewArticle builds an article with the usual header fields (Path, From,
// Newsgroups, Subject, Date, Message-ID) and body. The Date is fixed
// (2024-01-02 03:04:05 UTC) so responses are stable; body may be text or
// yEnc, in LF or CRLF form.
func NewArticle(id, newsgroups, subject string, body []byte) Article {
	eol := "\n"
	if bytes.IndexByte(body, '\r') >= 0 {
		eol = "\r\n"
	}
	var b bytes.Buffer
	for _, f := range [][2]string{
		{"Path", "nntptest!not-for-mail"},
		{"From", "Tester <tester@example.com>"},
		{"Newsgroups", newsgroups},
		{"Subject", subject},
		{"Date", "Tue, 02 Jan 2024 03:04:05 +0000"},
		{"Message-ID", id},
	} {
		b.WriteString(f[0] + ": " + f[1] + eol)
	}
	b.WriteString(eol)
	b.Write(body)
	return Article{MessageID: id, Raw: b.Bytes()}
}

// stored is an article in wire form with what the reader commands need.
type stored struct {
	id      string
	wire    []byte // CRLF line endings, not dot-stuffed
	body    int    // offset of the body in wire
	hdr     proto.Header
	numbers map[string]int64
	arrived time.Time
	lines   int // body lines, for :lines
}

func (a *stored) header() []byte {
	// The header section without the empty line that ends it.
	h := a.wire[:a.body]
	if bytes.HasSuffix(h, []byte("\r\n\r\n")) {
		return h[:len(h)-2]
	}
	return h
}

// group is a Group with its articles by number.
type group struct {
	Group
	arts map[int64]*stored
	nums []int64 // sorted
}

// marks returns the count, low and high water marks a GROUP reports.
func (g *group) marks() (count, low, high int64) {
	count = int64(len(g.nums))
	if count > 0 {
		low, high = g.nums[0], g.nums[len(g.nums)-1]
	} else {
		low, high = 1, 0
	}
	if g.Low != 0 {
		low = g.Low
	}
	if g.High != 0 {
		high = g.High
	}
	return count, low, high
}

// next returns the number a new article gets in g.
func (g *group) next() int64 {
	n := int64(1)
	if len(g.nums) > 0 {
		n = g.nums[len(g.nums)-1] + 1
	}
	if g.High >= n {
		n = g.High + 1
	}
	return n
}

// store holds groups and articles; the Server's mutex guards it.
type store struct {
	groups map[string]*group
	byID   map[string]*stored
}

func (st *store) init() {
	st.groups = make(map[string]*group)
	st.byID = make(map[string]*stored)
}

func (st *store) sortedGroups() []*group {
	out := make([]*group, 0, len(st.groups))
	for _, g := range st.groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *group) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// toWire converts a native (LF only) article to CRLF; an article holding any
// CR is taken to be in wire form already.
func toWire(raw []byte) []byte {
	if bytes.IndexByte(raw, '\r') >= 0 {
		return bytes.Clone(raw)
	}
	return bytes.ReplaceAll(raw, []byte("\n"), []byte("\r\n"))
}

func (st *store) add(a Article, now time.Time) (*stored, error) {
	wire := toWire(a.Raw)
	h, body, err := proto.ParseHeaders(wire)
	if err != nil {
		return nil, fmt.Errorf("nntptest: add article: %w", err)
	}
	id := a.MessageID
	if id == "" {
		id = h.Get("Message-ID")
	}
	if !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, ">") {
		return nil, fmt.Errorf("nntptest: add article: message-id %q is not <...>", id)
	}
	if _, dup := st.byID[id]; dup {
		return nil, fmt.Errorf("nntptest: add article %s: already stored", id)
	}
	numbers := a.Numbers
	if numbers == nil {
		numbers = make(map[string]int64)
		for _, name := range strings.Split(h.Get("Newsgroups"), ",") {
			name = strings.TrimSpace(name)
			if g := st.groups[name]; g != nil {
				numbers[name] = g.next()
			}
		}
	}
	for name, n := range numbers {
		g := st.groups[name]
		if g == nil {
			return nil, fmt.Errorf("nntptest: add article %s: no group %s", id, name)
		}
		if _, taken := g.arts[n]; taken {
			return nil, fmt.Errorf("nntptest: add article %s: %s:%d is taken", id, name, n)
		}
	}
	arrived := a.Arrived
	if arrived.IsZero() {
		arrived = now
	}
	s := &stored{id: id, wire: wire, body: body, hdr: h, numbers: numbers, arrived: arrived}
	if body < len(wire) {
		s.lines = bytes.Count(wire[body:], []byte("\n"))
		if wire[len(wire)-1] != '\n' {
			s.lines++
		}
	}
	for name, n := range numbers {
		g := st.groups[name]
		g.arts[n] = s
		i, _ := slices.BinarySearch(g.nums, n)
		g.nums = slices.Insert(g.nums, i, n)
	}
	st.byID[id] = s
	return s, nil
}

func (st *store) remove(id string) bool {
	a := st.byID[id]
	if a == nil {
		return false
	}
	delete(st.byID, id)
	for name, n := range a.numbers {
		g := st.groups[name]
		if g == nil {
			continue
		}
		delete(g.arts, n)
		if i, ok := slices.BinarySearch(g.nums, n); ok {
			g.nums = slices.Delete(g.nums, i, i+1)
		}
	}
	return true
}

// AddGroup adds g, or replaces the settings of the group with its name
// (keeping its articles).
func (s *Server) AddGroup(g Group) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.store.groups[g.Name]; old != nil {
		old.Group = g
		return
	}
	s.store.groups[g.Name] = &group{Group: g, arts: make(map[int64]*stored)}
}

// AddArticle stores a; its groups must exist. It fails on a header section
// proto.ParseHeaders refuses, a missing message-id, a duplicate, or a
// number already taken.
func (s *Server) AddArticle(a Article) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.store.add(a, s.now())
	return err
}

// RemoveArticle removes the article with message-id id, as if expired or
// cancelled; it reports whether there was one.
func (s *Server) RemoveArticle(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store.remove(id)
}

// ArticleBytes returns the stored article with message-id id in wire form
// (CRLF, not dot-stuffed).
func (s *Server) ArticleBytes(id string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.store.byID[id]
	if a == nil {
		return nil, false
	}
	return a.wire, true
}

// ArticleNumber returns the number of the article with message-id id in
// group, or 0 if the group does not hold it.
func (s *Server) ArticleNumber(group, id string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.store.byID[id]; a != nil {
		return a.numbers[group]
	}
	return 0
}

// Groups returns the groups the server carries with the water marks it
// reports, sorted by name.
func (s *Server) Groups() []Group {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Group
	for _, g := range s.store.sortedGroups() {
		c := g.Group
		_, c.Low, c.High = g.marks()
		out = append(out, c)
	}
	return out
}

// overviewFmtLines is the LIST OVERVIEW.FMT this server answers (RFC 3977
// §8.4): proto.DefaultOverviewFmt, INN's default.
func overviewFmtLines() []byte {
	var b []byte
	for _, f := range proto.DefaultOverviewFmt {
		b = append(b, f.Name...)
		if !strings.HasPrefix(f.Name, ":") {
			b = append(b, ':')
		}
		if f.Full {
			b = append(b, "full"...)
		}
		b = append(b, '\r', '\n')
	}
	return b
}

// overview appends the OVER line of a with number n (RFC 3977 §8.3.2);
// proto.AppendOverviewLine replaces TAB, CR and LF in values by spaces.
func (s *Server) overview(dst []byte, a *stored, n int64) []byte {
	o := proto.Overview{
		Number:     n,
		Subject:    a.hdr.Get("Subject"),
		From:       a.hdr.Get("From"),
		Date:       a.hdr.Get("Date"),
		MessageID:  a.hdr.Get("Message-ID"),
		References: a.hdr.Get("References"),
		Bytes:      int64(len(a.wire)),
		Lines:      int64(a.lines),
	}
	if x, ok := s.headerValue(a, "Xref"); ok {
		o.Extra = []proto.OverviewExtra{{Name: "Xref", Value: x}}
	}
	return proto.AppendOverviewLine(dst, o, proto.DefaultOverviewFmt)
}

// xref is the Xref value the server would give a: host and group:number pairs.
func (s *Server) xref(a *stored) string {
	names := make([]string, 0, len(a.numbers))
	for name := range a.numbers {
		names = append(names, name)
	}
	slices.Sort(names)
	x := s.hostname
	for _, name := range names {
		x += " " + name + ":" + strconv.FormatInt(a.numbers[name], 10)
	}
	return x
}

// headerValue is what HDR reports for field of a: a header field's
// value, or the :bytes and :lines metadata (RFC 3977 §8.5).
func (s *Server) headerValue(a *stored, field string) (string, bool) {
	switch strings.ToLower(field) {
	case ":bytes":
		return strconv.Itoa(len(a.wire)), true
	case ":lines":
		return strconv.Itoa(a.lines), true
	case "xref":
		if x := a.hdr.Get("Xref"); x != "" {
			return x, true
		}
		if len(a.numbers) > 0 {
			return s.xref(a), true
		}
		return "", false
	}
	if !a.hdr.Has(field) {
		return "", false
	}
	return a.hdr.Get(field), true
}

func appendClean(dst []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\t' || c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}
