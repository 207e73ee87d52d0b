package par2

import (
	"crypto/md5"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/newsflow/newsflow/proto/gf16"
)

// A File is one file the set protects, with its slice checksums.
type File struct {
	FileDesc
	Slices []SliceSum // one per input slice, the last zero-padded
	First  int        // global index of its first input slice
}

// Location says where a recovery slice's data lies, in the caller's terms:
// Volume is the caller's number for the file it read, Offset where the
// slice data (after header and exponent) starts in it.
type Location struct {
	Volume int
	Offset int64
}

// Recovery is one recovery slice found in the volumes.
type Recovery struct {
	Exponent uint32
	Location
	Length uint64 // of its data; must equal the slice size
}

// A Set is a recovery set as the packets describe it, checked for
// consistency: every protected file described and its slices listed.
type Set struct {
	ID        [16]byte
	SliceSize uint64
	Files     []File     // protected files in input-slice order
	Others    []FileDesc // described, not protected (those found)
	Recovery  []Recovery // distinct exponents, ascending
	Creator   string
	Slices    int // input slices in all
	// Skipped counts packets ignored: unknown types, other sets.
	Skipped int
}

// A Collector gathers checked packets, in any order and with duplicates
// (every volume repeats the critical packets), into a Set.
type Collector struct {
	mains    map[[16]byte]Main
	descs    map[[16]byte]FileDesc
	ifsc     map[[16]byte]IFSC
	recovery map[[16]byte]map[uint32]Recovery
	creator  string
	skipped  int
	sums     int // slice checksums held, over all IFSC packets
}

// What a Collector holds is bounded, so a hostile volume full of distinct
// packets cannot make it grow without end.
const (
	maxDescs = MaxFiles
	maxSums  = 2 * MaxSlices
	maxSets  = 16
)

// Add takes a packet whose body has been checked (Header.Check). Recovery
// slice packets go to AddRecovery instead, so their data need not be held.
func (c *Collector) Add(h Header, body []byte) error {
	c.init()
	switch h.Type {
	case TypeMain:
		m, err := ParseMain(body)
		if err != nil {
			return err
		}
		// The set id is the MD5 of the main body; a main packet that lies
		// about its set would pull other packets into a set they are not in.
		if md5.Sum(body) != h.SetID {
			return fmt.Errorf("par2: main packet: set id %x is not the MD5 of its body", h.SetID)
		}
		if _, ok := c.mains[h.SetID]; !ok && len(c.mains) == maxSets {
			return fmt.Errorf("par2: packets of more than %d recovery sets", maxSets)
		}
		c.mains[h.SetID] = m
	case TypeFileDesc:
		d, err := ParseFileDesc(body)
		if err != nil {
			return err
		}
		if old, ok := c.descs[d.ID]; ok && old != d {
			return fmt.Errorf("par2: two different descriptions of file %x (%q, %q)", d.ID, old.Name, d.Name)
		} else if !ok && len(c.descs) == maxDescs {
			return fmt.Errorf("par2: more than %d file descriptions", maxDescs)
		}
		c.descs[d.ID] = d
	case TypeIFSC:
		p, err := ParseIFSC(body)
		if err != nil {
			return err
		}
		if old, ok := c.ifsc[p.FileID]; ok && !slices.Equal(old.Slices, p.Slices) {
			return fmt.Errorf("par2: two different slice checksum lists for file %x", p.FileID)
		} else if !ok {
			if c.sums+len(p.Slices) > maxSums {
				return fmt.Errorf("par2: more than %d slice checksums in all", maxSums)
			}
			c.sums += len(p.Slices)
		}
		c.ifsc[p.FileID] = p
	case TypeCreator:
		c.creator = ParseCreator(body)
	case TypeRecovery:
		return fmt.Errorf("par2: recovery slice packets go to AddRecovery")
	default:
		c.skipped++
	}
	return nil
}

// init allocates the maps on first use.
func (c *Collector) init() {
	if c.mains == nil {
		c.mains = map[[16]byte]Main{}
		c.descs = map[[16]byte]FileDesc{}
		c.ifsc = map[[16]byte]IFSC{}
		c.recovery = map[[16]byte]map[uint32]Recovery{}
	}
}

// AddRecovery records a checked recovery slice packet of set setID: its
// exponent, where its data is and the data's length.
func (c *Collector) AddRecovery(setID [16]byte, r Recovery) {
	c.init()
	m := c.recovery[setID]
	if m == nil {
		if len(c.recovery) == maxSets {
			return // its main packet would be refused anyway
		}
		m = map[uint32]Recovery{}
		c.recovery[setID] = m
	}
	if _, dup := m[r.Exponent]; !dup && len(m) < gf16.Order {
		m[r.Exponent] = r
	}
}

// Set checks what was gathered and returns the recovery set. It refuses a
// set it cannot trust: no main packet or several, a protected file without
// description or checksums, a checksum count that does not match the file
// length, recovery data of the wrong size, unsafe or repeated names, more
// slices than the spec's constants allow.
func (c *Collector) Set() (*Set, error) {
	if len(c.mains) == 0 {
		return nil, fmt.Errorf("par2: no main packet found")
	}
	if len(c.mains) > 1 {
		return nil, fmt.Errorf("par2: packets of %d different recovery sets", len(c.mains))
	}
	s := &Set{Creator: c.creator, Skipped: c.skipped}
	var m Main
	for s.ID, m = range c.mains {
	}
	s.SliceSize = m.SliceSize
	names := map[string]bool{}
	for _, id := range m.Files {
		d, ok := c.descs[id]
		if !ok {
			return nil, fmt.Errorf("par2: no description of protected file %x", id)
		}
		p, ok := c.ifsc[id]
		if !ok {
			return nil, fmt.Errorf("par2: no slice checksums for %q", d.Name)
		}
		if err := checkName(d.Name, names); err != nil {
			return nil, err
		}
		want := (d.Length + s.SliceSize - 1) / s.SliceSize
		if uint64(len(p.Slices)) != want {
			return nil, fmt.Errorf("par2: %q: %d slice checksums for %d bytes in slices of %d (want %d)", d.Name, len(p.Slices), d.Length, s.SliceSize, want)
		}
		if s.Slices+len(p.Slices) > MaxSlices {
			return nil, fmt.Errorf("par2: more than %d input slices", MaxSlices)
		}
		s.Files = append(s.Files, File{FileDesc: d, Slices: p.Slices, First: s.Slices})
		s.Slices += len(p.Slices)
	}
	for _, id := range m.Others {
		if d, ok := c.descs[id]; ok {
			if err := checkName(d.Name, names); err != nil {
				return nil, err
			}
			s.Others = append(s.Others, d)
		}
	}
	for _, r := range c.recovery[s.ID] {
		if r.Length != s.SliceSize {
			return nil, fmt.Errorf("par2: recovery slice %d holds %d bytes, slice size is %d", r.Exponent, r.Length, s.SliceSize)
		}
		if r.Exponent >= gf16.Order {
			return nil, fmt.Errorf("par2: recovery slice exponent %d out of range", r.Exponent)
		}
		s.Recovery = append(s.Recovery, r)
	}
	slices.SortFunc(s.Recovery, func(a, b Recovery) int { return int(a.Exponent) - int(b.Exponent) })
	return s, nil
}

// checkName refuses names that would leave the directory or collide.
func checkName(name string, seen map[string]bool) error {
	switch {
	case name == "", strings.ContainsAny(name, "\x00\\"), strings.HasPrefix(name, "/"):
		return fmt.Errorf("par2: unsafe file name %q", name)
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." || el == "." || el == "" {
			return fmt.Errorf("par2: unsafe file name %q", name)
		}
	}
	if seen[name] {
		return fmt.Errorf("par2: file name %q used twice", name)
	}
	seen[name] = true
	return nil
}

// Slice returns where input slice i lies: the file's index in Files, the
// byte offset in it and how many bytes of the file it holds (the rest of
// the slice is zero padding).
func (s *Set) Slice(i int) (file int, off int64, n int) {
	file, _ = slices.BinarySearchFunc(s.Files, i, func(f File, i int) int {
		if f.First+len(f.Slices) <= i {
			return -1
		}
		if f.First > i {
			return 1
		}
		return 0
	})
	f := &s.Files[file]
	off = int64(i-f.First) * int64(s.SliceSize)
	return file, off, int(min(uint64(f.Length)-uint64(off), s.SliceSize))
}

// constants holds the spec's input slice constants: the i-th is 2^n for
// the i-th n (from 1) with gcd(n, 65535) = 1, that is n not divisible by
// 3, 5, 17 or 257 (spec "Recovery Slice packet"; par2cmdline's database).
var constants = sync.OnceValue(func() []uint16 {
	c := make([]uint16, 0, MaxSlices)
	for n := uint32(1); len(c) < MaxSlices; n++ {
		if n%3 != 0 && n%5 != 0 && n%17 != 0 && n%257 != 0 {
			c = append(c, gf16.Pow(2, n))
		}
	}
	return c
})

// Constant returns input slice i's constant.
func Constant(i int) uint16 { return constants()[i] }

// Coefficient returns the factor of input slice i in the recovery slice of
// exponent e: Constant(i)^e.
func Coefficient(i int, e uint32) uint16 { return gf16.Pow(Constant(i), e) }

// AppendCritical appends the set's critical packets: main, then for each
// file its description and checksums, then the creator.
func (s *Set) AppendCritical(dst []byte) []byte {
	m := Main{SliceSize: s.SliceSize}
	for _, f := range s.Files {
		m.Files = append(m.Files, f.ID)
	}
	for _, d := range s.Others {
		m.Others = append(m.Others, d.ID)
	}
	dst = AppendPacket(dst, s.ID, TypeMain, m.AppendBody(nil))
	for _, f := range s.Files {
		dst = AppendPacket(dst, s.ID, TypeFileDesc, f.FileDesc.AppendBody(nil))
		dst = AppendPacket(dst, s.ID, TypeIFSC, IFSC{FileID: f.ID, Slices: f.Slices}.AppendBody(nil))
	}
	for _, d := range s.Others {
		dst = AppendPacket(dst, s.ID, TypeFileDesc, d.AppendBody(nil))
	}
	if s.Creator != "" {
		dst = AppendPacket(dst, s.ID, TypeCreator, AppendCreatorBody(nil, s.Creator))
	}
	return dst
}

// NewSet builds a set from file descriptions and their slice checksums
// (for writing one): files are ordered by id as the spec wants, and the id
// is computed from the main packet.
func NewSet(sliceSize uint64, files []File, creator string) *Set {
	s := &Set{SliceSize: sliceSize, Creator: creator}
	s.Files = slices.Clone(files)
	slices.SortFunc(s.Files, func(a, b File) int { return strings.Compare(string(a.ID[:]), string(b.ID[:])) })
	m := Main{SliceSize: sliceSize}
	for i := range s.Files {
		s.Files[i].First = s.Slices
		s.Slices += len(s.Files[i].Slices)
		m.Files = append(m.Files, s.Files[i].ID)
	}
	s.ID = m.SetID()
	return s
}
