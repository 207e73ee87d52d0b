package unpack

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Format is the kind of archive a Set holds.
type Format string

// The archive formats Dir unpacks.
const (
	RAR      Format = "rar"
	SevenZip Format = "7z"
	Zip      Format = "zip"
)

// A Set is one archive: its volumes in order, the first one opened.
type Set struct {
	Format  Format
	Volumes []string // file names, first volume first
	// Problem is set when the set cannot be unpacked as found (its first
	// volume is missing, or a volume number is missing in between).
	Problem string
}

// First is the volume an archive reader opens.
func (s Set) First() string { return s.Volumes[0] }

// Volume names, matched on the lower-cased file name, first match wins:
//
//	x.part1.rar x.part2.rar ...      RAR 3+ "new" naming (part01, part001 too)
//	x.rar x.r00 x.r01 ...            RAR "old" naming (also a single x.rar)
//	x.7z | x.7z.001 x.7z.002 ...     7-Zip, single or split
//	x.zip                            zip (split zips are not read)
//
// A pattern's first group is the set's base name; its second, when it has
// one, the volume number. A volume without a number is its set's head.
var volumePatterns = []struct {
	re     *regexp.Regexp
	format Format
	style  string // sets group by format, style and base
}{
	{regexp.MustCompile(`^(.+)\.part(\d{1,4})\.rar$`), RAR, "part"},
	{regexp.MustCompile(`^(.+)\.rar$`), RAR, "old"},
	{regexp.MustCompile(`^(.+)\.r(\d{2,3})$`), RAR, "old"},
	{regexp.MustCompile(`^(.+)\.7z$`), SevenZip, "7z"},
	{regexp.MustCompile(`^(.+)\.7z\.(\d{3})$`), SevenZip, "7zsplit"},
	{regexp.MustCompile(`^(.+)\.zip$`), Zip, "zip"},
}

// member is one volume found while grouping.
type member struct {
	name string
	num  int // order within the set; -1 for the x.rar / x.7z head
}

// Sets groups file names into archives. Names that are no archive volume
// (and RAR ".rNN" volumes without their ".rar") are left out. The result
// is sorted by first volume name, so the order is stable.
func Sets(names []string) []Set {
	type key struct {
		format Format
		style  string
		base   string
	}
	groups := map[key][]member{}
	for _, n := range names {
		l := strings.ToLower(n)
		for _, p := range volumePatterns {
			m := p.re.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			num := -1
			if len(m) > 2 {
				num, _ = strconv.Atoi(m[2])
			}
			k := key{p.format, p.style, m[1]}
			groups[k] = append(groups[k], member{n, num})
			break
		}
	}
	var sets []Set
	for k, ms := range groups {
		sort.Slice(ms, func(i, j int) bool {
			if ms[i].num != ms[j].num {
				return ms[i].num < ms[j].num
			}
			return ms[i].name < ms[j].name
		})
		s := Set{Format: k.format}
		for _, m := range ms {
			s.Volumes = append(s.Volumes, m.name)
		}
		switch k.style {
		case "part":
			s.Problem = gap(ms, 1)
		case "old":
			if ms[0].num != -1 {
				// .r00 ... without the .rar that starts the set: not an
				// archive we can open; leave the files alone.
				continue
			}
			s.Problem = gap(ms[1:], 0)
		case "7zsplit":
			s.Problem = gap(ms, 1)
		default:
			if len(ms) > 1 {
				s.Problem = "two files differ only in case: " + ms[0].name + ", " + ms[1].name
			}
		}
		sets = append(sets, s)
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].First() < sets[j].First() })
	return sets
}

// gap reports the first volume number missing from ms (sorted), counting
// from first, or "" when they follow one another.
func gap(ms []member, first int) string {
	want := first
	for _, m := range ms {
		if m.num != want {
			if m.num < want {
				return "volume " + m.name + " appears twice"
			}
			return "volume " + strconv.Itoa(want) + " is missing (before " + m.name + ")"
		}
		want++
	}
	return ""
}
