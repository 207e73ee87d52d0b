package reader

import (
	"strings"

	"github.com/newsflow/newsflow/proto"
)

// Strategy is how a Client fetches thread data for a range of articles.
type Strategy uint8

// Strategies, in order of preference.
const (
	StrategyHDR   Strategy = iota + 1 // HDR Message-ID, References, Subject, From, Date over the range, merged by number (RFC 3977 §8.5)
	StrategyOVER                      // OVER over the range (RFC 3977 §8.3)
	StrategyXOVER                     // XOVER over the range: OVER as deployed before RFC 3977, for servers without CAPABILITIES
	StrategyHEAD                      // HEAD per article (RFC 3977 §6.2.2): works everywhere, one command per article
)

var strategyNames = [...]string{"none", "HDR", "OVER", "XOVER", "HEAD"}

// String returns the command the strategy uses ("none" for 0).
func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return "strategy(?)"
}

// Hints are what a server said beyond CAPABILITIES that bears on the choice.
type Hints struct {
	// Legacy: the server did not answer CAPABILITIES (an RFC 977 server);
	// nothing can be known in advance, so XOVER is tried, then HEAD.
	Legacy bool

	// Headers is the LIST HEADERS answer (RFC 3977 §8.6): the fields HDR
	// serves, ":" meaning any header. nil when not asked or not available.
	Headers []string

	// OverviewFmt is the LIST OVERVIEW.FMT answer (RFC 3977 §8.4), nil when
	// not asked or not available. A server whose list cannot be parsed
	// (ParseOverviewFmt fails) has BadOverviewFmt set instead.
	OverviewFmt    proto.OverviewFmt
	BadOverviewFmt bool

	// Refused holds strategies the server refused on this connection (500,
	// 501 or 503 to the command): they are not chosen again.
	Refused []Strategy
}

func (h Hints) refused(s Strategy) bool {
	for _, r := range h.Refused {
		if r == s {
			return true
		}
	}
	return false
}

// hdrCovers reports whether HDR can serve every field the HDR strategy
// asks for. Without a LIST HEADERS answer it is assumed to: the five are
// all overview fields (RFC 3977 §8.4.2), which servers that answer HDR from
// their overview database (INN's nnrpd) always serve, and an answer that
// refuses the command demotes the strategy at run time. With one, ":" (any
// header, RFC 3977 §8.6.2) or all five named are needed.
func hdrCovers(headers []string) bool {
	if headers == nil {
		return true
	}
	have := make(map[string]bool, len(headers))
	for _, h := range headers {
		if h == ":" {
			return true
		}
		have[strings.ToLower(h)] = true
	}
	for _, f := range hdrFields {
		if !have[strings.ToLower(f)] {
			return false
		}
	}
	return true
}

// ChooseStrategy picks the thread-data strategy from the capabilities and
// hints, in this order:
//
//  1. HDR when HDR is advertised, LIST HEADERS (if known) covers
//     Message-ID, References, Subject, From and Date, and it was not refused;
//  2. OVER when OVER is advertised, the overview format (if known) parses,
//     and it was not refused;
//  3. XOVER for a legacy server (no CAPABILITIES), unless refused;
//  4. HEAD otherwise.
func ChooseStrategy(caps proto.CapabilitySet, h Hints) Strategy {
	switch {
	case !h.Legacy && caps.Has(proto.CapHdr) && hdrCovers(h.Headers) && !h.refused(StrategyHDR):
		return StrategyHDR
	case !h.Legacy && caps.Has(proto.CapOver) && !h.BadOverviewFmt && !h.refused(StrategyOVER):
		return StrategyOVER
	case h.Legacy && !h.refused(StrategyXOVER):
		return StrategyXOVER
	}
	return StrategyHEAD
}

// wantHints reports which LIST commands are worth sending before fetching
// with strategy s: LIST HEADERS for HDR when the server lists HEADERS under
// LIST; LIST OVERVIEW.FMT for OVER when it is listed. An answer may change
// the choice (ChooseStrategy), after which the hint of the new one is asked.
func wantHints(caps proto.CapabilitySet, h Hints, s Strategy) (headers, overviewFmt bool) {
	if h.Legacy {
		return false, false
	}
	switch s {
	case StrategyHDR:
		return h.Headers == nil && caps.HasArg(proto.CapList, "HEADERS"), false
	case StrategyOVER:
		return false, h.OverviewFmt == nil && !h.BadOverviewFmt && caps.HasArg(proto.CapList, "OVERVIEW.FMT")
	}
	return false, false
}
