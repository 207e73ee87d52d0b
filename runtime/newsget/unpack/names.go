package unpack

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/newsflow/newsflow/runtime/newsget"
)

// maxDepth bounds the directories an entry may nest in.
const maxDepth = 32

// EntryPath turns an entry name from an archive into a relative path under
// the output folder, each component sanitised like a downloaded file's
// name (newsget.SanitizeName). Both '/' and '\' separate components. It
// refuses, rather than repairs, a name that would leave the folder (zip-slip):
// an absolute path, a drive letter, or a ".." component.
func EntryPath(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("empty entry name")
	}
	if name[0] == '/' || name[0] == '\\' {
		return "", fmt.Errorf("entry %q: absolute path refused", name)
	}
	if len(name) >= 2 && name[1] == ':' {
		return "", fmt.Errorf("entry %q: drive letter refused", name)
	}
	parts := strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' })
	var out []string
	for _, p := range parts {
		switch p {
		case ".":
			continue
		case "..":
			return "", fmt.Errorf("entry %q: \"..\" would leave the output folder; refused", name)
		}
		out = append(out, newsget.SanitizeName(p, "_"))
	}
	if len(out) == 0 {
		return "", fmt.Errorf("entry %q: no name left", name)
	}
	if len(out) > maxDepth {
		return "", fmt.Errorf("entry %q: deeper than %d directories", name, maxDepth)
	}
	return filepath.Join(out...), nil
}

// PasswordFromName finds a password written into an NZB's file name as
// "{{password}}" (SABnzbd and NZBGet convention, "Movie{{secret}}.nzb").
func PasswordFromName(name string) (string, bool) {
	base := filepath.Base(name)
	i := strings.Index(base, "{{")
	if i < 0 {
		return "", false
	}
	j := strings.Index(base[i+2:], "}}")
	if j <= 0 {
		return "", false
	}
	return base[i+2 : i+2+j], true
}
