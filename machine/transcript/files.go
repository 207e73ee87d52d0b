package transcript

import (
	"fmt"
	"io/fs"
	"iter"
	"strings"
)

// Transcript tests keep their set-up in the transcript itself, as comments
// of the form "# key: value" ("# config: window=2", "# want: ..."). Fields
// reads them; ReadFile and ReadFiles load the testdata files from a file
// system the caller gives (os.DirFS(".") in a test), so this package itself
// touches no file.

// Fields yields the key and value of every "# key: value" comment in t, in
// order: the text before the first colon as it stands, and the rest with
// surrounding white space trimmed. Comments without a colon are skipped.
func (t Transcript) Fields() iter.Seq2[string, string] {
	return func(yield func(key, value string) bool) {
		for _, e := range t {
			if e.Kind != Comment {
				continue
			}
			key, val, ok := strings.Cut(e.Text, ":")
			if !ok {
				continue
			}
			if !yield(key, strings.TrimSpace(val)) {
				return
			}
		}
	}
}

// ReadFile reads and parses the transcript in the named file of fsys.
func ReadFile(fsys fs.FS, path string) (Transcript, error) {
	text, err := fs.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	t, err := Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// A File is one transcript read by ReadFiles.
type File struct {
	Path       string     // as the pattern matched it
	Transcript Transcript // its parsed entries
}

// ReadFiles reads and parses every file of fsys that the fs.Glob pattern
// matches, in Glob's (lexical) order. It is an error for nothing to match,
// so that a test over testdata/*.txt cannot pass by finding no files.
func ReadFiles(fsys fs.FS, pattern string) ([]File, error) {
	paths, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, fmt.Errorf("transcript: %s: %w", pattern, err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("transcript: no files match %s", pattern)
	}
	files := make([]File, 0, len(paths))
	for _, p := range paths {
		t, err := ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: p, Transcript: t})
	}
	return files, nil
}
