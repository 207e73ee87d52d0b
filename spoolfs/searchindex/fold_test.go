package searchindex

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Search folds case and accents in subjects, authors, bodies and queries.
func TestSearchFolds(t *testing.T) {
	ix := open(t, t.TempDir(), 0)
	if err := ix.Append("de.test", []Entry{
		entry(1, "Café au lait", "Ann <ann@x>"),
		entry(2, "Termine", "Jörg Müller <jm@x>"),
		entry(3, "Wohnung", "Bea <bea@x>"),
		entry(4, "Plain", "Dan <dan@x>"),
	}); err != nil {
		t.Fatal(err)
	}
	if err := ix.AppendBodies("de.test", []Body{{Number: 3, Text: "Die Wohnung liegt in der Hauptstraße, nahe dem Ørsted-Platz."}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q    Query
		want []string
	}{
		{Query{Text: "cafe"}, []string{"de.test <1@t>"}},
		{Query{Text: "CAFÉ"}, []string{"de.test <1@t>"}},
		{Query{Text: "muller"}, []string{"de.test <2@t>"}},
		{Query{Author: "MÜLLER jorg"}, []string{"de.test <2@t>"}},
		{Query{Text: "hauptstrasse"}, []string{"de.test <3@t>"}},
		{Query{Text: "Hauptstraße"}, []string{"de.test <3@t>"}},
		{Query{Text: "orsted"}, []string{"de.test <3@t>"}},
		{Query{Text: "\"in der hauptstrasse\""}, []string{"de.test <3@t>"}},
	} {
		if d := cmp.Diff(tc.want, ids(ix.Search(tc.q))); d != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.q, d)
		}
	}
	if got := fold("Straße ÆON Œuvre Ça"); got != "strasse aeon oeuvre ca" {
		t.Errorf("fold: %q", got)
	}
}

// Offset pages through the hits, newest first: past the first 100 too.
func TestSearchOffset(t *testing.T) {
	ix := open(t, t.TempDir(), 0)
	var es []Entry
	for n := int64(1); n <= 250; n++ {
		es = append(es, entry(n, "same topic", "Ann <ann@x>"))
	}
	if err := ix.Append("misc.test", es); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ offset, n, first int }{{0, 100, 250}, {100, 100, 150}, {200, 50, 50}, {300, 0, 0}} {
		r := ix.Search(Query{Text: "topic", Limit: 100, Offset: tc.offset})
		if r.Total != 250 || len(r.Hits) != tc.n || (tc.n > 0 && r.Hits[0].Number != int64(tc.first)) {
			t.Errorf("offset %d: total %d, %d hits from %v; want 250, %d from %d", tc.offset, r.Total, len(r.Hits), r.Hits, tc.n, tc.first)
		}
	}
}
