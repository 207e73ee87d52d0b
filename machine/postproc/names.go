package postproc

import (
	"strconv"
	"strings"
)

// Par2Name is what a PAR2 file's name says: "x.par2" is the index (no
// recovery blocks), "x.vol07+08.par2" holds 8 recovery blocks starting
// at exponent 7. This is newsget's one parser of PAR2 file names: the
// download holds volumes back by it, Choose plans over it, and
// machine/dlqueue's fail-fast rule counts blocks with it.
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

// IsVolume reports whether name is a PAR2 recovery volume
// (NAME.volNN+MM.par2): the files a download holds back.
func IsVolume(name string) bool {
	p, ok := ParsePar2Name(name)
	return ok && !p.Index
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
