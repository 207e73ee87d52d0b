package reader

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
)

// caps builds a capability set from lines like "HDR" and "LIST ACTIVE HEADERS".
func caps(lines ...string) proto.CapabilitySet {
	c, err := proto.ParseCapabilities(lines)
	if err != nil {
		panic(err)
	}
	return c
}

// innReader is what INN 2.7.1's nnrpd lists (runtime/goroutine's recording).
var innReader = caps("VERSION 2", "IMPLEMENTATION INN 2.7.1", "AUTHINFO SASL", "COMPRESS DEFLATE", "HDR",
	"LIST ACTIVE ACTIVE.TIMES COUNTS DISTRIB.PATS DISTRIBUTIONS HEADERS MODERATORS MOTD NEWSGROUPS OVERVIEW.FMT SUBSCRIPTIONS",
	"OVER", "POST", "READER", "SASL SCRAM-SHA-512", "STARTTLS", "XPAT")

func TestChooseStrategy(t *testing.T) {
	fiveFields := []string{"Subject", "From", "Date", "Message-ID", "References", ":bytes", ":lines"}
	tests := []struct {
		name  string
		caps  proto.CapabilitySet
		hints Hints
		want  Strategy
	}{
		{"INN nnrpd: HDR preferred", innReader, Hints{}, StrategyHDR},
		{"HDR and OVER", caps("VERSION 2", "READER", "HDR", "OVER"), Hints{}, StrategyHDR},
		{"HDR only", caps("VERSION 2", "READER", "HDR"), Hints{}, StrategyHDR},
		{"OVER only", caps("VERSION 2", "READER", "OVER", "LIST ACTIVE OVERVIEW.FMT"), Hints{}, StrategyOVER},
		{"OVER MSGID", caps("VERSION 2", "READER", "OVER MSGID"), Hints{}, StrategyOVER},
		{"neither: HEAD", caps("VERSION 2", "READER", "LIST ACTIVE"), Hints{}, StrategyHEAD},
		{"transit-only caps: HEAD", caps("VERSION 2", "IHAVE", "MODE-READER"), Hints{}, StrategyHEAD},
		{"legacy: XOVER", proto.CapabilitySet{}, Hints{Legacy: true}, StrategyXOVER},
		{"legacy, XOVER refused: HEAD", proto.CapabilitySet{}, Hints{Legacy: true, Refused: []Strategy{StrategyXOVER}}, StrategyHEAD},
		{"legacy ignores stale caps", caps("HDR", "OVER"), Hints{Legacy: true}, StrategyXOVER},
		{"LIST HEADERS any header", innReader, Hints{Headers: []string{":", ":bytes", ":lines"}}, StrategyHDR},
		{"LIST HEADERS names all five", innReader, Hints{Headers: fiveFields}, StrategyHDR},
		{"LIST HEADERS case-insensitive", innReader, Hints{Headers: []string{"subject", "FROM", "date", "message-id", "REFERENCES"}}, StrategyHDR},
		{"LIST HEADERS lacks References: OVER", innReader, Hints{Headers: []string{"Subject", "From", "Date", "Message-ID"}}, StrategyOVER},
		{"LIST HEADERS empty: OVER", innReader, Hints{Headers: []string{}}, StrategyOVER},
		{"LIST HEADERS lacks a field, no OVER: HEAD", caps("VERSION 2", "READER", "HDR"), Hints{Headers: []string{":bytes"}}, StrategyHEAD},
		{"HDR refused: OVER", innReader, Hints{Refused: []Strategy{StrategyHDR}}, StrategyOVER},
		{"HDR and OVER refused: HEAD", innReader, Hints{Refused: []Strategy{StrategyHDR, StrategyOVER}}, StrategyHEAD},
		{"OVERVIEW.FMT unparseable: no OVER", caps("VERSION 2", "READER", "OVER"), Hints{BadOverviewFmt: true}, StrategyHEAD},
		{"OVERVIEW.FMT unparseable does not stop HDR", innReader, Hints{BadOverviewFmt: true}, StrategyHDR},
		{"OVERVIEW.FMT known", caps("VERSION 2", "READER", "OVER"), Hints{OverviewFmt: proto.DefaultOverviewFmt}, StrategyOVER},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ChooseStrategy(tc.caps, tc.hints); got != tc.want {
				t.Errorf("ChooseStrategy = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWantHints(t *testing.T) {
	tests := []struct {
		name  string
		caps  proto.CapabilitySet
		hints Hints
		want  string
	}{
		{"INN: ask LIST HEADERS", innReader, Hints{}, "headers"},
		{"headers known", innReader, Hints{Headers: []string{":"}}, ""},
		{"HDR without LIST HEADERS", caps("VERSION 2", "READER", "HDR", "LIST ACTIVE"), Hints{}, ""},
		{"OVER: ask OVERVIEW.FMT", caps("VERSION 2", "READER", "OVER", "LIST ACTIVE OVERVIEW.FMT"), Hints{}, "fmt"},
		{"HDR refused, OVER: ask OVERVIEW.FMT", innReader, Hints{Refused: []Strategy{StrategyHDR}}, "fmt"},
		{"fmt known", caps("VERSION 2", "READER", "OVER", "LIST ACTIVE OVERVIEW.FMT"), Hints{OverviewFmt: proto.DefaultOverviewFmt}, ""},
		{"fmt bad", caps("VERSION 2", "READER", "OVER", "LIST ACTIVE OVERVIEW.FMT"), Hints{BadOverviewFmt: true}, ""},
		{"legacy", proto.CapabilitySet{}, Hints{Legacy: true}, ""},
		{"HEAD", caps("VERSION 2", "READER", "LIST ACTIVE HEADERS OVERVIEW.FMT"), Hints{}, ""},
	}
	for _, tc := range tests {
		h, f := wantHints(tc.caps, tc.hints, ChooseStrategy(tc.caps, tc.hints))
		var got []string
		if h {
			got = append(got, "headers")
		}
		if f {
			got = append(got, "fmt")
		}
		if d := cmp.Diff(tc.want, strings.Join(got, " ")); d != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.name, d)
		}
	}
}
