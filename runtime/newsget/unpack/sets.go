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

// Volume names, matched on the lower-cased file name:
//
//	x.part1.rar x.part2.rar ...      RAR 3+ "new" naming (part01, part001 too)
//	x.rar x.r00 x.r01 ...            RAR "old" naming (also a single x.rar)
//	x.7z | x.7z.001 x.7z.002 ...     7-Zip, single or split
//	x.zip                            zip (split zips are not read)
var (
	rePartRAR = regexp.MustCompile(`^(.+)\.part(\d{1,4})\.rar$`)
	reRAR     = regexp.MustCompile(`^(.+)\.rar$`)
	reOldRAR  = regexp.MustCompile(`^(.+)\.r(\d{2,3})$`)
	re7z      = regexp.MustCompile(`^(.+)\.7z$`)
	re7zSplit = regexp.MustCompile(`^(.+)\.7z\.(\d{3})$`)
	reZip     = regexp.MustCompile(`^(.+)\.zip$`)
)

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
		style  string // "part", "old", "7z", "7zsplit", "zip"
		base   string
	}
	groups := map[key][]member{}
	for _, n := range names {
		l := strings.ToLower(n)
		if m := rePartRAR.FindStringSubmatch(l); m != nil {
			num, _ := strconv.Atoi(m[2])
			k := key{RAR, "part", m[1]}
			groups[k] = append(groups[k], member{n, num})
			continue
		}
		if m := reRAR.FindStringSubmatch(l); m != nil {
			k := key{RAR, "old", m[1]}
			groups[k] = append(groups[k], member{n, -1})
			continue
		}
		if m := reOldRAR.FindStringSubmatch(l); m != nil {
			num, _ := strconv.Atoi(m[2])
			k := key{RAR, "old", m[1]}
			groups[k] = append(groups[k], member{n, num})
			continue
		}
		if m := re7z.FindStringSubmatch(l); m != nil {
			k := key{SevenZip, "7z", m[1]}
			groups[k] = append(groups[k], member{n, -1})
			continue
		}
		if m := re7zSplit.FindStringSubmatch(l); m != nil {
			num, _ := strconv.Atoi(m[2])
			k := key{SevenZip, "7zsplit", m[1]}
			groups[k] = append(groups[k], member{n, num})
			continue
		}
		if m := reZip.FindStringSubmatch(l); m != nil {
			k := key{Zip, "zip", m[1]}
			groups[k] = append(groups[k], member{n, -1})
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
