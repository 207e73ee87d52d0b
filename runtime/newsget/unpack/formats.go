package unpack

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bodgit/sevenzip"
	"github.com/nwaples/rardecode/v2"
)

// maxRARDictionary bounds the memory a RAR header can make us allocate for
// the decoder's window (RAR 7 allows up to 64 GiB; rar's own -md maximum
// on most machines, and what posters use, is far below 1 GiB).
const maxRARDictionary = 1 << 30

// entry is one member of an archive as its format's reader reports it.
type entry struct {
	name   string
	dir    bool
	link   bool  // symbolic or hard link: never created
	size   int64 // -1 when the archive does not say
	crc    uint32
	hasCRC bool // crc is the archive's CRC-32 of the contents
}

// walkFunc receives each entry in archive order with a reader of its
// contents (nil for directories and links). The reader returns an error
// at its end when the format's own check (CRC, size) fails.
type walkFunc func(e entry, r io.Reader) error

// walk reads every entry of the archive whose first volume is path. The
// archive comes from strangers: a decoder library that panics on a
// header it did not expect (Fuzz7z found one in sevenzip's header
// reader) fails this archive with an error instead of the process.
func walk(format Format, path, password string, maxEntries int, fn walkFunc) error {
	return guard(format, path, func() error {
		switch format {
		case RAR:
			_, err := walkRAR(path, password, nil, fn)
			return err
		case SevenZip:
			return walk7z(path, password, defaultLimits7z(maxEntries), fn)
		case Zip:
			return walkZip(path, fn)
		}
		return fmt.Errorf("unknown archive format %q", format)
	})
}

// guard runs read, turning a panic of a decoder library into the
// archive's error.
func guard(format Format, path string, read func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%s archive %s is damaged: its decoder failed: %v", format, filepath.Base(path), v)
		}
	}()
	return read()
}

// walkRAR reads a RAR 1.5-7 archive, following its volumes (opened
// through fsys when not nil), and returns the names of the volumes read.
// The library checks each file's CRC-32 (or BLAKE2 hash) at its end.
func walkRAR(path, password string, fsys fs.FS, fn walkFunc) ([]string, error) {
	opts := []rardecode.Option{rardecode.MaxDictionarySize(maxRARDictionary)}
	if password != "" {
		opts = append(opts, rardecode.Password(password))
	}
	if fsys != nil {
		opts = append(opts, rardecode.FileSystem(fsys))
	}
	rc, err := rardecode.OpenReader(path, opts...)
	if err != nil {
		return nil, passwordHint(err, password)
	}
	defer rc.Close()
	for {
		h, err := rc.Next()
		if err == io.EOF {
			return rc.Volumes(), nil
		}
		if err != nil {
			return nil, passwordHint(err, password)
		}
		e := entry{name: h.Name, dir: h.IsDir, link: h.LinkType != 0 || h.Mode()&fs.ModeSymlink != 0, size: h.UnPackedSize}
		if h.UnKnownSize {
			e.size = -1
		}
		var r io.Reader = rc
		if e.dir || e.link {
			r = nil
		}
		if err := fn(e, r); err != nil {
			return nil, passwordHint(err, password)
		}
	}
}

// walk7z reads a 7-Zip archive (x.7z, or x.7z.001 and its followers).
// check7z reads its header first, so that a header the library would
// allocate without bound for is refused before the library opens it.
func walk7z(path, password string, lim limits7z, fn walkFunc) error {
	var aes bool
	if err := checkVolumes7z(path, password, lim, &aes); err != nil {
		return passwordHint(err, password)
	}
	rc, err := sevenzip.OpenReaderWithPassword(path, password)
	if err != nil {
		return passwordHint(err, password)
	}
	defer rc.Close()
	for _, f := range rc.File {
		mode := f.Mode()
		e := entry{name: f.Name, dir: mode.IsDir(), link: mode&fs.ModeSymlink != 0,
			size: int64(f.UncompressedSize), crc: f.CRC32, hasCRC: f.CRC32 != 0}
		if e.size < 0 {
			return fmt.Errorf("entry %q: size %d out of range", f.Name, f.UncompressedSize)
		}
		if err := open(e, f.Open, fn); err != nil {
			if aes && errors.Is(err, errCRC) {
				// AES decrypts anything with any key: a wrong (or no)
				// password shows only in the contents' CRC-32.
				err = &sevenzip.ReadError{Encrypted: true, Err: err}
			}
			return passwordHint(err, password)
		}
	}
	return nil
}

// checkVolumes7z runs check7z on the archive whose first volume is path,
// its volumes joined as the library joins them: x.7z alone, or x.7z.001
// followed by x.7z.002 and on while they exist.
func checkVolumes7z(path, password string, lim limits7z, aes *bool) error {
	var parts []io.ReaderAt
	var sizes []int64
	var total int64
	for i := 1; ; i++ {
		name := path
		if i > 1 {
			if filepath.Ext(path) != ".001" {
				break
			}
			name = fmt.Sprintf("%s.%03d", strings.TrimSuffix(path, ".001"), i)
		}
		f, err := os.Open(name)
		if i > 1 && errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		parts, sizes, total = append(parts, f), append(sizes, st.Size()), total+st.Size()
	}
	return check7z(joinedVolumes{parts, sizes}, total, password, lim, aes)
}

// joinedVolumes reads volumes one after the other as one archive.
type joinedVolumes struct {
	parts []io.ReaderAt
	sizes []int64
}

func (j joinedVolumes) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for i, part := range j.parts {
		if off >= j.sizes[i] {
			off -= j.sizes[i]
			continue
		}
		want := min(int64(len(p)-n), j.sizes[i]-off)
		m, err := part.ReadAt(p[n:n+int(want)], off)
		n += m
		if err != nil && !(errors.Is(err, io.EOF) && int64(m) == want) {
			return n, err
		}
		if n == len(p) {
			return n, nil
		}
		off = 0
	}
	return n, io.EOF
}

// walkZip reads a zip archive with the standard library, which checks each
// entry's CRC-32 and size at its end. Encrypted entries are refused: Go's
// archive/zip cannot decrypt them.
func walkZip(path string, fn walkFunc) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		mode := f.Mode()
		e := entry{name: f.Name, dir: mode.IsDir(), link: mode&fs.ModeSymlink != 0,
			size: int64(f.UncompressedSize64), crc: f.CRC32, hasCRC: true}
		if e.size < 0 {
			return fmt.Errorf("entry %q: size %d out of range", f.Name, f.UncompressedSize64)
		}
		if f.Flags&0x1 != 0 && !e.dir && !e.link {
			return fmt.Errorf("entry %q is encrypted; encrypted zip entries are not supported (use 7z or RAR)", f.Name)
		}
		if err := open(e, f.Open, fn); err != nil {
			return err
		}
	}
	return nil
}

// open hands one entry to fn: directories and links without contents,
// files with a reader from openFile, closed afterwards.
func open(e entry, openFile func() (io.ReadCloser, error), fn walkFunc) error {
	if e.dir || e.link {
		return fn(e, nil)
	}
	r, err := openFile()
	if err != nil {
		return fmt.Errorf("entry %q: %w", e.name, err)
	}
	defer r.Close()
	return fn(e, r)
}

// Encrypted reports whether err is (or wraps) an archive's refusal to
// open without the right password.
func Encrypted(err error) bool {
	var re *sevenzip.ReadError
	return errors.Is(err, rardecode.ErrArchiveEncrypted) || errors.Is(err, rardecode.ErrArchivedFileEncrypted) ||
		errors.Is(err, rardecode.ErrBadPassword) || (errors.As(err, &re) && re.Encrypted)
}

// passwordHint adds what the user can do to a library's password error.
func passwordHint(err error, password string) error {
	encrypted := Encrypted(err)
	switch {
	case !encrypted && password != "" && (errors.Is(err, errCRC) || errors.Is(err, rardecode.ErrBadFileChecksum)):
		return fmt.Errorf("%w (or the password given does not open the archive)", err)
	case !encrypted:
		return err
	case password == "":
		return fmt.Errorf("%w (the archive is encrypted and no password was given: <meta type=\"password\"> in the NZB, {{password}} at the end of its name, -password on the command line, or a password with newsget serve's retry)", err)
	default:
		return fmt.Errorf("%w (the archive is encrypted; the password given does not open it)", err)
	}
}
