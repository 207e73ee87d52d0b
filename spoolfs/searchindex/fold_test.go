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
