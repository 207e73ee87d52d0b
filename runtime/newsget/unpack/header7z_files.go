package unpack

// The files part of the 7z header check (header7z.go): the entries'
// properties, where a header claims the counts the library allocates for.

// filesInfo is the library's readFilesInfo.
func (h *headerCheck) filesInfo() error {
	files, err := h.count(true)
	if err != nil {
		return err
	}
	if files > uint64(h.lim.entries) {
		return refuse7z("it claims %d entries, more than the limit of %d", files, h.lim.entries)
	}
	// The header's []FileHeader, then the Reader's []*File and each File.
	if err := h.alloc("entries", files, sizeFile7z); err != nil {
		return err
	}
	var emptyStreams uint64
	for {
		property, err := h.byte()
		if err != nil {
			return err
		}
		if property == id7zEnd {
			return nil
		}
		length, err := h.number()
		if err != nil {
			return err
		}
		switch property {
		case id7zEmptyStream:
			n, err := h.bools("empty stream flags", files)
			if err != nil {
				return err
			}
			emptyStreams += n
		case id7zEmptyFile:
			if _, err := h.bools("empty file flags", emptyStreams); err != nil {
				return err
			}
		case id7zCTime, id7zATime, id7zMTime:
			if err := h.items("times", files, sizeTime7z, 8); err != nil {
				return err
			}
		case id7zName:
			if err := h.names(files, length); err != nil {
				return err
			}
		case id7zWinAttributes:
			if err := h.items("attributes", files, 4, 4); err != nil {
				return err
			}
		case id7zDummy:
			if int64(length) > 0 { // the library copies nothing for a negative length
				if _, err := h.take(length); err != nil {
					return err
				}
			}
		default:
			return refuse7z("files info: unexpected property %d", property)
		}
	}
}

// items is the library's readTimes and readAttributes: which of count
// items are defined, then size bytes each in memory, wire bytes each of
// the defined ones in the header.
func (h *headerCheck) items(what string, count, size, wire uint64) error {
	if err := checkCount7z(count, true); err != nil {
		return err
	}
	_, n, err := h.defined(what, count)
	if err != nil {
		return err
	}
	if err := h.notExternal(what); err != nil {
		return err
	}
	if err := h.alloc(what, count, size); err != nil {
		return err
	}
	_, err = h.take(wire * n)
	return err
}

// names is the library's readNames: length-1 bytes of NUL-terminated
// UTF-16 names, which must be count.
func (h *headerCheck) names(count, length uint64) error {
	if err := checkCount7z(count, true); err != nil {
		return err
	}
	if err := h.notExternal("names"); err != nil {
		return err
	}
	var b []byte
	if length > 0 && int64(length-1) > 0 { // the library's io.LimitReader(r, int64(length-1))
		var err error
		if b, err = h.take(length - 1); err != nil {
			return err
		}
	}
	// []string of count, the names (UTF-8 of UTF-16: at most 3 bytes for
	// 2) and bufio.Scanner's buffer.
	if err := h.alloc("names", count, sizeString7z); err != nil {
		return err
	}
	if err := h.alloc("bytes of names", uint64(len(b))*2+64<<10, 1); err != nil {
		return err
	}
	var names uint64
	tail := false
	for i := 0; i+1 < len(b); i += 2 {
		if b[i] == 0 && b[i+1] == 0 {
			names++
			tail = false
		} else {
			tail = true
		}
	}
	if tail || len(b)%2 == 1 {
		names++
	}
	if names != count {
		return refuse7z("%d names for %d entries", names, count)
	}
	return nil
}
