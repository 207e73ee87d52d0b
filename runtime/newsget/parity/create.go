package parity

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/newsflow/newsflow/proto/par2"
	"github.com/newsflow/newsflow/spoolfs"
)

// Create writes a recovery set for the named files of dir (names relative
// to dir, with /): NAME.par2 with the critical packets, and the recovery
// slices (exponents 0..recovery-1) in volumes NAME.volA+B.par2 of doubling
// size, as par2cmdline lays them out. Used by tests and newsbench; newsget
// itself only reads sets.
func Create(ctx context.Context, dir, name string, files []string, sliceSize, recovery int, o Options) (*Set, error) {
	if sliceSize <= 0 || sliceSize%4 != 0 {
		return nil, fmt.Errorf("par2: create: slice size %d is not a positive multiple of 4", sliceSize)
	}
	var fs []par2.File
	for _, n := range files {
		f, err := describe(filepath.Join(dir, filepath.FromSlash(n)), n, sliceSize)
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	set := par2.NewSet(uint64(sliceSize), fs, "newsget")
	if set.Slices > par2.MaxSlices {
		return nil, fmt.Errorf("par2: create: %d slices, limit %d", set.Slices, par2.MaxSlices)
	}
	// Recovery slices: R_e = sum of Coefficient(i, e) * D_i, the inputs
	// read in batches like repair's syndromes.
	rec := make([][]byte, recovery)
	for e := range rec {
		rec[e] = make([]byte, sliceSize)
	}
	s := &Set{Set: set, Dir: dir}
	handles := make([]*os.File, len(set.Files))
	for i, f := range set.Files {
		h, err := os.Open(filepath.Join(dir, filepath.FromSlash(f.Name)))
		if err != nil {
			return nil, fmt.Errorf("par2: create: %w", err)
		}
		defer h.Close()
		handles[i] = h
	}
	all := allSlices(set.Slices)
	plan := &par2.Plan{}
	for e := range recovery {
		plan.Use = append(plan.Use, par2.Recovery{Exponent: uint32(e)})
	}
	if recovery > 0 {
		if err := s.syndromes(ctx, rec, plan, all, handles, 0, o); err != nil {
			return nil, err
		}
	}
	critical := set.AppendCritical(nil)
	if err := writeFile(filepath.Join(dir, name+".par2"), critical); err != nil {
		return nil, err
	}
	s.Volumes = append(s.Volumes, filepath.Join(dir, name+".par2"))
	width := len(fmt.Sprint(recovery))
	for first, count := 0, 1; first < recovery; first, count = first+count, count*2 {
		count = min(count, recovery-first)
		b := append([]byte(nil), critical...)
		for e := first; e < first+count; e++ {
			b = par2.AppendPacket(b, set.ID, par2.TypeRecovery, append(binary.LittleEndian.AppendUint32(nil, uint32(e)), rec[e]...))
		}
		path := filepath.Join(dir, fmt.Sprintf("%s.vol%0*d+%0*d.par2", name, width, first, width, count))
		if err := writeFile(path, b); err != nil {
			return nil, err
		}
	}
	return Open(ctx, filepath.Join(dir, name+".par2"))
}

// describe hashes one file: whole MD5, MD5 of the first 16 KiB, and each
// slice's MD5 and CRC-32 (the last zero-padded).
func describe(path, name string, sliceSize int) (par2.File, error) {
	var f par2.File
	h, err := os.Open(path)
	if err != nil {
		return f, fmt.Errorf("par2: create: %w", err)
	}
	defer h.Close()
	whole, first := md5.New(), md5.New()
	buf := make([]byte, sliceSize)
	for {
		n, err := io.ReadFull(h, buf)
		if n > 0 {
			if f.Length < 16384 {
				first.Write(buf[:min(uint64(n), 16384-f.Length)])
			}
			whole.Write(buf[:n])
			f.Length += uint64(n)
			clear(buf[n:])
			f.Slices = append(f.Slices, par2.SliceSum{MD5: md5.Sum(buf), CRC32: crc32.ChecksumIEEE(buf)})
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return f, fmt.Errorf("par2: create: %w", err)
		}
	}
	f.MD5_16 = [16]byte(first.Sum(nil))
	f.MD5 = [16]byte(whole.Sum(nil))
	f.Name = name
	f.ID = par2.FileID(f.MD5_16, f.Length, name)
	return f, nil
}

// writeFile writes data durably (spoolfs.WriteFileDurable).
func writeFile(path string, data []byte) error {
	if err := spoolfs.WriteFileDurable(path, data, 0o644); err != nil {
		return fmt.Errorf("par2: create: %w", err)
	}
	return nil
}
