package proto

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// innTransitCaps is CAPABILITIES as innd 2.7.1 answers on its feed port,
// after "200 news.example.net InterNetNews server INN 2.7.1 ready (transit mode)".
// (Shape per the project's INN notes; the order is not significant.)
var innTransitCaps = []string{
	"VERSION 2",
	"IMPLEMENTATION INN 2.7.1",
	"IHAVE",
	"LIST ACTIVE NEWSGROUPS",
	"MODE-READER",
	"STREAMING",
	"X-EXPERIMENT on",
}

// innReaderCaps is what nnrpd 2.7 lists to a reader.
var innReaderCaps = []string{
	"VERSION 2",
	"READER",
	"POST",
	"NEWNEWS",
	"HDR",
	"OVER MSGID",
	"LIST ACTIVE ACTIVE.TIMES COUNTS DISTRIB.PATS DISTRIBUTIONS HEADERS MODERATORS MOTD NEWSGROUPS OVERVIEW.FMT SUBSCRIPTIONS",
	"AUTHINFO USER",
	"SASL PLAIN",
	"STARTTLS",
	"COMPRESS DEFLATE",
	"IMPLEMENTATION INN 2.7.1",
}

func TestParseCapabilitiesINN(t *testing.T) {
	c, err := ParseCapabilities(innTransitCaps)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what string
		got  bool
		want bool
	}{
		{"Has IHAVE", c.Has(CapIHave), true},
		{"Has streaming (lower case)", c.Has("streaming"), true},
		{"Has MODE-READER", c.Has(CapModeReader), true},
		{"Has READER", c.Has(CapReader), false},
		{"unknown label kept", c.HasArg("x-experiment", "ON"), true},
		{"LIST ACTIVE", c.HasArg(CapList, "active"), true},
		{"LIST OVERVIEW.FMT", c.HasArg(CapList, "OVERVIEW.FMT"), false},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.what, ch.got, ch.want)
		}
	}
	if v := c.Version(); v != 2 {
		t.Errorf("Version = %d", v)
	}
	if s := c.Implementation(); s != "INN 2.7.1" {
		t.Errorf("Implementation = %q", s)
	}

	r, err := ParseCapabilities(innReaderCaps)
	if err != nil {
		t.Fatal(err)
	}
	for _, la := range [][2]string{{"OVER", "MSGID"}, {"AUTHINFO", "USER"}, {"SASL", "PLAIN"}, {"COMPRESS", "DEFLATE"}, {"LIST", "OVERVIEW.FMT"}, {"LIST", "HEADERS"}} {
		if !r.HasArg(la[0], la[1]) {
			t.Errorf("reader caps: HasArg(%s, %s) false", la[0], la[1])
		}
	}
	if r.Has(CapIHave) || !r.Has(CapHdr) || !r.Has(CapStartTLS) || r.Args(CapHdr) != nil {
		t.Errorf("reader caps: IHAVE/HDR/STARTTLS wrong")
	}
}

func TestParseCapabilities(t *testing.T) {
	tests := []struct {
		name    string
		lines   []string
		want    CapabilitySet
		wantErr string
	}{
		{"labels upper-cased, args kept", []string{"version 2", "list Active newsgroups\r\n"},
			CapabilitySet{[]Capability{{"VERSION", []string{"2"}}, {"LIST", []string{"Active", "newsgroups"}}}}, ""},
		{"blank lines skipped, tabs separate", []string{"", "VERSION\t2 3", "  "},
			CapabilitySet{[]Capability{{"VERSION", []string{"2", "3"}}}}, ""},
		{"duplicate label merged", []string{"LIST ACTIVE", "LIST NEWSGROUPS"},
			CapabilitySet{[]Capability{{"LIST", []string{"ACTIVE", "NEWSGROUPS"}}}}, ""},
		{"no VERSION tolerated", []string{"IHAVE"}, CapabilitySet{[]Capability{{"IHAVE", nil}}}, ""},
		{"label starting with a digit", []string{"2FA"}, CapabilitySet{}, "RFC 3977 §9.8"},
		{"label with a dot", []string{"X.Y"}, CapabilitySet{}, "'.' at offset 1"},
		{"control in argument", []string{"LIST A\x01"}, CapabilitySet{}, "control octet 0x01"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCapabilities(tc.lines)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diff:\n%s", diff)
			}
		})
	}
	var none CapabilitySet
	if none.Version() != 0 || none.Has("VERSION") || none.Implementation() != "" {
		t.Errorf("empty set answers wrongly")
	}
}

func TestAppendCapabilities(t *testing.T) {
	c := CapabilitySet{[]Capability{{"IHAVE", nil}, {"version", []string{"2"}}, {"LIST", []string{"ACTIVE", "NEWSGROUPS"}}}}
	got := string(AppendCapabilities(nil, c))
	want := "VERSION 2\r\nIHAVE\r\nLIST ACTIVE NEWSGROUPS\r\n"
	if got != want {
		t.Errorf("AppendCapabilities = %q, want %q", got, want)
	}
	// A server sends it as a 101 block.
	block := AppendBlock(AppendResponse(nil, CodeCapabilities, "Capability list:"), []byte(got))
	if !strings.HasSuffix(string(block), "NEWSGROUPS\r\n.\r\n") {
		t.Errorf("block = %q", block)
	}
}

// TestParseCapabilitiesLoose: a line that is not a capability is skipped,
// the rest kept.
func TestParseCapabilitiesLoose(t *testing.T) {
	got := ParseCapabilitiesLoose([]string{"VERSION 2", "X_ODD extension", "3D", "READER", "POST\x01 x", "list active"})
	want := CapabilitySet{List: []Capability{{Label: "VERSION", Args: []string{"2"}}, {Label: "READER"}, {Label: "LIST", Args: []string{"active"}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func FuzzCapabilities(f *testing.F) {
	f.Add([]byte(strings.Join(innTransitCaps, "\r\n")))
	f.Add([]byte(strings.Join(innReaderCaps, "\n")))
	f.Add([]byte("list a\nLIST b\nversion 3 2\n\n"))
	f.Add([]byte("VERSION 2\r\nX_ODD\r\nREADER\r\n"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		// The loose parse keeps what the strict one would, and only lines
		// that are capabilities.
		loose := ParseCapabilitiesLoose(PayloadLines(payload))
		if _, err := ParseCapabilities(PayloadLines(AppendCapabilities(nil, loose))); err != nil {
			t.Fatalf("the loose parse kept a bad line: %v", err)
		}
		c, err := ParseCapabilities(PayloadLines(payload))
		if err != nil {
			return
		}
		if diff := cmp.Diff(c, loose); diff != "" {
			t.Fatalf("loose and strict parses differ on a valid list:\n%s", diff)
		}
		// Writing and re-reading keeps every label and argument; a second
		// trip is exact.
		c2, err := ParseCapabilities(PayloadLines(AppendCapabilities(nil, c)))
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		for _, cp := range c.List {
			if diff := cmp.Diff(cp.Args, c2.Args(cp.Label)); diff != "" || !c2.Has(cp.Label) {
				t.Fatalf("label %s lost or changed:\n%s", cp.Label, diff)
			}
		}
		if len(c2.List) != len(c.List) || c2.Version() != c.Version() {
			t.Fatalf("%d labels became %d", len(c.List), len(c2.List))
		}
		c3, err := ParseCapabilities(PayloadLines(AppendCapabilities(nil, c2)))
		if diff := cmp.Diff(c2, c3); diff != "" || err != nil {
			t.Fatalf("second trip differs (err %v):\n%s", err, diff)
		}
		if len(c2.List) > 0 && c2.Has(CapVersion) && c2.List[0].Label != CapVersion {
			t.Fatalf("VERSION not first: %+v", c2.List)
		}
	})
}
