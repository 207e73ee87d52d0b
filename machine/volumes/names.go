package volumes

import (
	"strconv"
	"strings"
)

// Par2Name is what a PAR2 file's name says: "x.par2" is the index (no
// recovery blocks), "x.vol07+08.par2" holds 8 recovery blocks starting
// at exponent 7. This is newsget's one parser of PAR2 file names: the
// download holds volumes back by it (Hold), post-processing plans over it,
// and machine/dlqueue's fail-fast rule counts blocks with it.
type Par2Name struct {
	Base   string // the set's name, "x"
	First  int    // first exponent of a volume
	Blocks int    // recovery blocks in a volume; 0 for the index
	Index  bool   // the index file (x.par2)
}

// MaxPar2Blocks bounds the blocks one volume name may claim (PAR2 allows
// 32768 recovery blocks in a set), so a hostile name cannot inflate the
// repair capacity.
const MaxPar2Blocks = 32768

// ParsePar2Name reads a file name (case-insensitive suffix) as a PAR2
// file. ok is false for anything else, and for a volume whose numbers do
// not parse or claim more than MaxPar2Blocks.
func ParsePar2Name(name string) (p Par2Name, ok bool) {
	lower := strings.ToLower(name)
	if !strings.HasSuffix(lower, ".par2") {
		return Par2Name{}, false
	}
	stem := name[:len(name)-len(".par2")]
	dot := strings.LastIndexByte(stem, '.')
	if dot >= 0 && strings.HasPrefix(strings.ToLower(stem[dot+1:]), "vol") {
		first, count, found := strings.Cut(stem[dot+4:], "+")
		f, err1 := strconv.Atoi(first)
		c, err2 := strconv.Atoi(count)
		if found && err1 == nil && err2 == nil && f >= 0 && c > 0 && c <= MaxPar2Blocks && f <= MaxPar2Blocks &&
			digits(first) && digits(count) {
			return Par2Name{Base: stem[:dot], First: f, Blocks: c}, true
		}
		return Par2Name{}, false
	}
	return Par2Name{Base: stem, Index: true}, true
}

// digits reports whether s is all ASCII digits (Atoi also takes signs).
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Hold says which files of a job to hold back during the download: the
// recovery volumes of every set whose index (NAME.par2) the job also
// lists. Without its index a set's volumes are all the set there is, so
// they are fetched (a volume carries the set's description too). Names
// match case-insensitively; hold[i] is for names[i].
func Hold(names []string) []bool {
	index := map[string]bool{}
	for _, n := range names {
		if p, ok := ParsePar2Name(n); ok && p.Index {
			index[strings.ToLower(p.Base)] = true
		}
	}
	hold := make([]bool, len(names))
	for i, n := range names {
		p, ok := ParsePar2Name(n)
		hold[i] = ok && !p.Index && index[strings.ToLower(p.Base)]
	}
	return hold
}
