package newsweb

// The group list for real servers (tens of thousands of groups): a filter
// (?q=, a case-insensitive substring of the name or description), a
// hierarchy (?h=comp shows comp.* and, above the list, comp's
// sub-hierarchies), and pages of groupsPerPage. Without a filter or
// hierarchy, a list longer than one page opens on the top-level
// hierarchies with their group counts. A group's count is the freshest
// the site has: the group-stats cache's when it holds the group, else the
// LIST ACTIVE estimate.

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/newsflow/newsflow/proto"
)

const (
	groupsPerPage = 100
	maxFilter     = 200
)

// hierarchyLink is one hierarchy with its number of groups.
type hierarchyLink struct {
	Name   string
	Groups int
	Link   string
}

type groupsView struct {
	base
	Groups      []Group
	Total       int    // groups the servers carry
	Matched     int    // groups the filter and hierarchy leave
	ServerCount int    // servers whose lists are in Groups
	Missing     string // the servers that did not answer, as a phrase ("news2 and news3")
	Query       string
	Hierarchy   string
	Hierarchies []hierarchyLink
	Pager       pager
}

// groupFilter is the group list's query.
type groupFilter struct {
	q, h string
	page int
}

func parseGroupFilter(r *http.Request) (groupFilter, error) {
	f := groupFilter{q: strings.TrimSpace(queryValue(r, "q")), h: strings.Trim(queryValue(r, "h"), ". *")}
	if len(f.q) > maxFilter || (f.h != "" && proto.ValidGroupName(f.h) != nil) {
		return f, errBad
	}
	page, err := pageParam(r)
	f.page = page
	return f, err
}

// url is the list's address for page with this filter.
func (f groupFilter) url(page int) string {
	v := url.Values{}
	if f.q != "" {
		v.Set("q", f.q)
	}
	if f.h != "" {
		v.Set("h", f.h)
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	if len(v) == 0 {
		return "/"
	}
	return "/?" + v.Encode()
}

// match keeps the groups of the filter and hierarchy.
func (f groupFilter) match(groups []Group) []Group {
	if f.q == "" && f.h == "" {
		return groups
	}
	q := strings.ToLower(f.q)
	var out []Group
	for _, g := range groups {
		if f.h != "" && !strings.HasPrefix(g.Name, f.h+".") && g.Name != f.h {
			continue
		}
		if q != "" && !strings.Contains(strings.ToLower(g.Name), q) && !strings.Contains(strings.ToLower(g.Description), q) {
			continue
		}
		out = append(out, g)
	}
	return out
}

// hierarchies counts the groups under each next-level hierarchy of prefix
// ("" for the top level) that holds more than one group.
func hierarchies(groups []Group, prefix string, f groupFilter) []hierarchyLink {
	counts := map[string]int{}
	for _, g := range groups {
		rest := g.Name
		if prefix != "" {
			rest = strings.TrimPrefix(g.Name, prefix+".")
			if rest == g.Name {
				continue
			}
		}
		first, _, ok := strings.Cut(rest, ".")
		if !ok {
			continue
		}
		name := first
		if prefix != "" {
			name = prefix + "." + first
		}
		counts[name]++
	}
	var out []hierarchyLink
	for name, n := range counts {
		if n > 1 {
			out = append(out, hierarchyLink{Name: name, Groups: n, Link: groupFilter{q: f.q, h: name}.url(1)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// groupList builds the page's view of groups, the lists of the servers
// but missing.
func (s *Server) groupList(groups []Group, f groupFilter, missing []string) groupsView {
	matched := f.match(groups)
	v := groupsView{base: s.base("Newsgroups", ""), Total: len(groups), Matched: len(matched),
		ServerCount: len(s.fed.Services()) - len(missing), Missing: andList(missing), Query: f.q, Hierarchy: f.h}
	v.Hierarchies = hierarchies(matched, f.h, f)
	pages := max(1, (len(matched)+groupsPerPage-1)/groupsPerPage)
	page := min(f.page, pages)
	lo, hi := (page-1)*groupsPerPage, min(page*groupsPerPage, len(matched))
	v.Groups = displayGroups(matched[lo:hi])
	for i := range v.Groups {
		if st, ok := s.fed.CachedStats(v.Groups[i].Name); ok {
			v.Groups[i].Count = st.Count
		}
		// The union, as the group's page counts it: with the articles
		// only other servers carry.
		v.Groups[i].Count += int64(s.fed.CachedOthers(v.Groups[i].Name))
	}
	v.Pager = pager{Page: page, Pages: pages, PrevLabel: "← Previous", NextLabel: "Next →"}
	if page > 1 {
		v.Pager.Prev = f.url(page - 1)
	}
	if page < pages {
		v.Pager.Next = f.url(page + 1)
	}
	return v
}

// andList is names as a phrase: "a", "a and b", "a, b and c".
func andList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
