package unpack

// The streams part of the 7z header check (header7z.go): the header's
// outline, pack info, folders with their coders, and substreams, each
// following the library's reader of the same name.

// streams7z is what the check keeps of a streams info: enough to decode
// an encoded header.
type streams7z struct {
	packPos   uint64
	packSizes []uint64
	folders   []*folder7z
	digests   []uint32 // per folder, 0 where none; nil when absent
}

// folder7z is one folder: its coders, how they are bound, its sizes.
type folder7z struct {
	coders    []coder7z
	bindPairs [][2]uint64 // in, out
	packed    []uint64    // inputs fed from packed streams
	sizes     []uint64    // of each coder's output
	in, out   uint64
}

// coder7z is one coder of a folder: method id, streams, properties.
type coder7z struct {
	id      []byte
	in, out uint64
	props   []byte
}

// header is the library's readHeader, after its id.
func (h *headerCheck) header() error {
	id, err := h.byte()
	if err != nil {
		return err
	}
	if id == id7zArchiveProperties || id == id7zAdditionalStreamsInfo {
		return refuse7z("archive properties and additional streams are not supported")
	}
	if id, err = h.section(id, id7zMainStreamsInfo, func() error {
		_, err := h.streamsInfo()
		return err
	}); err != nil {
		return err
	}
	if id, err = h.section(id, id7zFilesInfo, h.filesInfo); err != nil {
		return err
	}
	return end7z(id, "header")
}

// streamsInfo is the library's readStreamsInfo.
func (h *headerCheck) streamsInfo() (*streams7z, error) {
	s := &streams7z{}
	id, err := h.byte()
	if err != nil {
		return nil, err
	}
	if id, err = h.section(id, id7zPackInfo, func() error { return h.packInfo(s) }); err != nil {
		return nil, err
	}
	unpack := id == id7zUnpackInfo
	if id, err = h.section(id, id7zUnpackInfo, func() error { return h.unpackInfo(s) }); err != nil {
		return nil, err
	}
	if id == id7zSubStreamsInfo && !unpack {
		return nil, refuse7z("substreams without unpack info")
	}
	if id, err = h.section(id, id7zSubStreamsInfo, func() error { return h.subStreamsInfo(s) }); err != nil {
		return nil, err
	}
	return s, end7z(id, "streams info")
}

// packInfo is the library's readPackInfo.
func (h *headerCheck) packInfo(s *streams7z) error {
	var err error
	if s.packPos, err = h.number(); err != nil {
		return err
	}
	streams, err := h.count(true)
	if err != nil {
		return err
	}
	id, err := h.byte()
	if err != nil {
		return err
	}
	if id, err = h.section(id, id7zSize, func() (err error) {
		s.packSizes, err = h.sizes("pack sizes", streams)
		return err
	}); err != nil {
		return err
	}
	if id, err = h.section(id, id7zCRC, func() error {
		_, err := h.digests("pack digests", streams)
		return err
	}); err != nil {
		return err
	}
	return end7z(id, "pack info")
}

// unpackInfo is the library's readUnpackInfo.
func (h *headerCheck) unpackInfo(s *streams7z) error {
	if err := h.want(id7zFolder, "unpack info"); err != nil {
		return err
	}
	folders, err := h.count(true)
	if err != nil {
		return err
	}
	if err := h.notExternal("folders"); err != nil {
		return err
	}
	if folders > uint64(len(h.b)-h.off) { // a folder is several bytes
		return refuse7z("%d folders in the %d bytes left", folders, len(h.b)-h.off)
	}
	if folders > uint64(h.lim.entries) {
		// Each holds a file at least; and the library looks for a
		// file's folder from the first one, file by file.
		return refuse7z("%d folders, more than the limit of %d entries", folders, h.lim.entries)
	}
	for range folders {
		if err := h.alloc("folders", 1, sizeFolder7z*grown7z); err != nil {
			return err
		}
		f, err := h.folder()
		if err != nil {
			return err
		}
		s.folders = append(s.folders, f)
	}
	if err := h.want(id7zCodersUnpackSize, "unpack info"); err != nil {
		return err
	}
	for _, f := range s.folders {
		if err := h.alloc("unpack sizes", f.out, 8); err != nil {
			return err
		}
		f.sizes = make([]uint64, f.out)
		for i := range f.sizes {
			if f.sizes[i], err = h.number(); err != nil {
				return err
			}
		}
		if err := f.checkDecoders(h.lim.decoder); err != nil {
			return err
		}
		h.aes = h.aes || f.encrypted()
	}
	id, err := h.byte()
	if err != nil {
		return err
	}
	if id, err = h.section(id, id7zCRC, func() (err error) {
		s.digests, err = h.digests("folder digests", folders)
		return err
	}); err != nil {
		return err
	}
	return end7z(id, "unpack info")
}

// folder is the library's readFolder, held to 7-Zip's bounds.
func (h *headerCheck) folder() (*folder7z, error) {
	coders, err := h.count(true)
	if err != nil {
		return nil, err
	}
	if coders > maxCoders7z {
		return nil, refuse7z("a folder of %d coders (7-Zip allows %d)", coders, maxCoders7z)
	}
	f := &folder7z{}
	for range coders {
		c, err := h.coder()
		if err != nil {
			return nil, err
		}
		f.coders = append(f.coders, c)
		f.in += c.in
		f.out += c.out
		if f.in > maxStreams7z || f.out > maxStreams7z {
			// The library makes one reader for each stream.
			return nil, refuse7z("a folder of more than %d streams", maxStreams7z)
		}
	}
	if f.in < f.out {
		return nil, refuse7z("a folder with more outputs than inputs")
	}
	for range f.out - 1 {
		in, err := h.count(false)
		if err != nil {
			return nil, err
		}
		out, err := h.count(false)
		if err != nil {
			return nil, err
		}
		f.bindPairs = append(f.bindPairs, [2]uint64{in, out})
	}
	packedStreams := f.in - (f.out - 1)
	if packedStreams == 1 {
		for i := range f.in {
			if f.boundIn(i) < 0 {
				f.packed = append(f.packed, i)
			}
		}
		return f, nil
	}
	for range packedStreams {
		v, err := h.number()
		if err != nil {
			return nil, err
		}
		f.packed = append(f.packed, v)
	}
	return f, nil
}

// boundIn is the bind pair feeding input i, or -1.
func (f *folder7z) boundIn(i uint64) int {
	for k, bp := range f.bindPairs {
		if bp[0] == i {
			return k
		}
	}
	return -1
}

// boundOut is the bind pair taking output i, or -1.
func (f *folder7z) boundOut(i uint64) int {
	for k, bp := range f.bindPairs {
		if bp[1] == i {
			return k
		}
	}
	return -1
}

// unpackSize is the library's folder.unpackSize: the size of the output
// no bind pair takes.
func (f *folder7z) unpackSize() uint64 {
	if len(f.sizes) == 0 {
		return 0
	}
	for i := len(f.sizes) - 1; i >= 0; i-- {
		if f.boundOut(uint64(i)) < 0 {
			return f.sizes[i]
		}
	}
	return f.sizes[len(f.sizes)-1]
}

// coder is the library's readCoder.
func (h *headerCheck) coder() (coder7z, error) {
	var c coder7z
	if err := h.alloc("coders", 1, sizeCoder7z*grown7z); err != nil {
		return c, err
	}
	v, err := h.byte()
	if err != nil {
		return c, err
	}
	if c.id, err = h.take(uint64(v & 0xf)); err != nil {
		return c, err
	}
	c.in, c.out = 1, 1
	if v&0x10 != 0 {
		if c.in, err = h.count(true); err != nil {
			return c, err
		}
		if c.out, err = h.count(true); err != nil {
			return c, err
		}
		if c.in > maxStreams7z || c.out > maxStreams7z {
			return c, refuse7z("a coder of %d inputs and %d outputs", c.in, c.out)
		}
	}
	if v&0x20 != 0 {
		size, err := h.count(true)
		if err != nil {
			return c, err
		}
		if size > uint64(len(h.b)-h.off) {
			return c, refuse7z("coder properties of %d bytes in the %d left", size, len(h.b)-h.off)
		}
		if err := h.alloc("bytes of coder properties", size, 1); err != nil {
			return c, err
		}
		if c.props, err = h.take(size); err != nil {
			return c, err
		}
	}
	return c, nil
}

// subStreamsInfo is the library's readSubStreamsInfo.
func (h *headerCheck) subStreamsInfo(s *streams7z) error {
	id, err := h.byte()
	if err != nil {
		return err
	}
	if err := h.alloc("folders", uint64(len(s.folders)), 8); err != nil {
		return err
	}
	streams := make([]uint64, len(s.folders))
	for i := range streams {
		streams[i] = 1
	}
	if id, err = h.section(id, id7zNumUnpackStream, func() (err error) {
		for i := range streams {
			if streams[i], err = h.number(); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	files := uint64(0)
	for _, v := range streams {
		files += v // wrapping, as the library's sum does
	}
	if err := checkCount7z(files, false); err != nil {
		return err
	}
	if id, err = h.section(id, id7zSize, func() error { return h.substreamSizes(streams, files) }); err != nil {
		return err
	}
	if id, err = h.section(id, id7zCRC, func() error {
		_, err := h.digests("substream digests", files)
		return err
	}); err != nil {
		return err
	}
	return end7z(id, "substreams info")
}

// substreamSizes reads the sizes of every folder's substreams but the
// last (which is the rest of the folder), files in all.
func (h *headerCheck) substreamSizes(streams []uint64, files uint64) error {
	if err := h.alloc("substream sizes", files, 8); err != nil {
		return err
	}
	k := uint64(0)
	for _, n := range streams {
		if n == 0 {
			continue
		}
		for j := uint64(1); j < n; j++ {
			if k >= files {
				return refuse7z("more substream sizes than substreams")
			}
			if _, err := h.number(); err != nil {
				return err
			}
			k++
		}
		if k >= files {
			return refuse7z("more substream sizes than substreams")
		}
		k++
	}
	return nil
}
