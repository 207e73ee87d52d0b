// Package parity verifies and repairs downloaded files with their PAR 2.0
// recovery set: it reads the volumes, hashes files on every core, rebuilds
// missing slices with the Reed–Solomon code of proto/par2 and writes them
// back. The formats and the maths are in proto/par2 and proto/gf16; this
// package owns the files and the goroutines.
package parity

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/newsflow/newsflow/proto/par2"
)

// A Set is a recovery set read from its volumes on disk.
type Set struct {
	*par2.Set
	Dir     string   // where the protected files are
	Volumes []string // the .par2 files read; Recovery locations index them
	// BadPackets counts packets skipped as damaged (MD5 mismatch, lying
	// length); a damaged volume still gives its good packets.
	BadPackets int
}

// maxVolumes bounds how many .par2 files Open reads.
const maxVolumes = 1000

// volName matches NAME.par2 and NAME.volNN+MM.par2 (any case), capturing NAME.
var volName = regexp.MustCompile(`(?i)^(.*?)(\.vol\d+[+-]\d+)?\.par2$`)

// Open reads the recovery set of path (NAME.par2 or one of its volumes)
// from every NAME*.par2 beside it.
func Open(ctx context.Context, path string) (*Set, error) {
	m := volName.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return nil, fmt.Errorf("par2: %s: not a .par2 file name", path)
	}
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("par2: %w", err)
	}
	s := &Set{Dir: dir}
	for _, e := range entries {
		em := volName.FindStringSubmatch(e.Name())
		if em != nil && strings.EqualFold(em[1], m[1]) && e.Type().IsRegular() {
			s.Volumes = append(s.Volumes, filepath.Join(dir, e.Name()))
		}
	}
	if len(s.Volumes) == 0 {
		return nil, fmt.Errorf("par2: %s: no such file", path)
	}
	if len(s.Volumes) > maxVolumes {
		return nil, fmt.Errorf("par2: %s: %d volumes, limit %d", path, len(s.Volumes), maxVolumes)
	}
	var c par2.Collector
	for i, v := range s.Volumes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		bad, err := scanVolume(v, i, &c)
		if err != nil {
			return nil, err
		}
		s.BadPackets += bad
	}
	set, err := c.Set()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.Set = set
	return s, nil
}

// scanVolume feeds the good packets of one volume to c and returns how
// many it skipped as damaged. After a damaged packet it looks for the
// next magic (spec: readers resynchronise on "PAR2\0PKT").
func scanVolume(path string, vol int, c *par2.Collector) (bad int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("par2: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("par2: %w", err)
	}
	size := st.Size()
	var hdr [par2.HeaderSize]byte
	for off := int64(0); off+par2.HeaderSize <= size; {
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return bad, fmt.Errorf("par2: %s: %w", path, err)
		}
		h, herr := par2.ParseHeader(hdr[:])
		if herr == nil && h.Length <= uint64(size-off) {
			ok, err := readPacket(f, off, h, vol, c)
			if err != nil {
				return bad, fmt.Errorf("%s at %d: %w", path, off, err)
			}
			if ok {
				off += int64(h.Length)
				continue
			}
		}
		if !errors.Is(herr, par2.ErrNotPacket) {
			bad++
		}
		next, err := findMagic(f, off+4, size)
		if err != nil {
			return bad, fmt.Errorf("par2: %s: %w", path, err)
		}
		off = next
	}
	return bad, nil
}

// readPacket checks the packet at off and hands it to c; false means it
// is damaged. An error is a refusal of the set (a hostile packet).
func readPacket(f *os.File, off int64, h par2.Header, vol int, c *par2.Collector) (bool, error) {
	if h.Type == par2.TypeRecovery {
		// Stream the data through MD5; only its location is kept.
		sum := md5.New()
		sum.Write(h.HashPrefix())
		if _, err := io.Copy(sum, io.NewSectionReader(f, off+par2.HeaderSize, int64(h.BodyLength()))); err != nil {
			return false, fmt.Errorf("par2: %w", err)
		}
		if [16]byte(sum.Sum(nil)) != h.Hash || h.BodyLength() < 4 {
			return false, nil
		}
		var e [4]byte
		if _, err := f.ReadAt(e[:], off+par2.HeaderSize); err != nil {
			return false, fmt.Errorf("par2: %w", err)
		}
		exp, _ := par2.ParseRecoveryExponent(e[:])
		c.AddRecovery(h.SetID, par2.Recovery{Exponent: exp, Length: h.BodyLength() - 4,
			Location: par2.Location{Volume: vol, Offset: off + par2.RecoveryDataOffset}})
		return true, nil
	}
	if h.BodyLength() > par2.MaxPacket {
		return false, nil
	}
	body := make([]byte, h.BodyLength())
	if _, err := f.ReadAt(body, off+par2.HeaderSize); err != nil {
		return false, fmt.Errorf("par2: %w", err)
	}
	if h.Check(body) != nil {
		return false, nil
	}
	return true, c.Add(h, body)
}

// findMagic returns the offset of the next packet magic at or after from
// (size when there is none).
func findMagic(f *os.File, from, size int64) (int64, error) {
	buf := make([]byte, 1<<20)
	for from < size {
		n, err := f.ReadAt(buf, from)
		if err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.Index(buf[:n], []byte(par2.Magic)); i >= 0 {
			return from + int64(i), nil
		}
		if n < len(par2.Magic) {
			break
		}
		from += int64(n - len(par2.Magic) + 1)
	}
	return size, nil
}
