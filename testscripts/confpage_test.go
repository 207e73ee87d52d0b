package testscripts

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"
)

// Each program's configuration page, cmd/PROGRAM/PROGRAM.toml.5, documents
// every key that `PROGRAM config` prints, with the same default. The page
// writes a key as a tagged paragraph under the subsection of its table:
//
//	.SS "[table]"           (or "[[table]]"; keys outside any table sit
//	.TP                      under a subsection whose title has no "[")
//	\fBkey\fR = \fIDEFAULT\fR (TYPE)
//	What the key means.
//
// DEFAULT is the value as `PROGRAM config` prints it, in TOML syntax
// ("5m", 4096, true, [] ...), with groff's escapes (\- for -, \e for \);
// the word computed stands for a default the program works out at start
// (the state directory, the host name), and the paragraph says how.

// configPages lists the programs whose `config` output the pages follow.
var configPages = []string{"newsfeed", "newsget", "newsweb"}

// pageKey matches a key's tag line in a configuration page.
var pageKey = regexp.MustCompile(`^\\fB([A-Za-z0-9_.-]+)\\fR = \\fI(.*)\\fR`)

// pageKeys reads a configuration page's keys: "table.key" (or "key" at the
// top level) to the default's text.
func pageKeys(t *testing.T, src []byte) map[string]string {
	keys := map[string]string{}
	table := ""
	tp := false
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ".SS"):
			title := strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, ".SS")), `"`)
			table = ""
			if i := strings.LastIndexByte(title, '['); i >= 0 {
				table = strings.Trim(title[i:], "[]")
			}
		case strings.HasPrefix(line, ".SH"):
			table = ""
		case line == ".TP":
			tp = true
			continue
		case tp:
			if m := pageKey.FindStringSubmatch(line); m != nil {
				name := m[1]
				if table != "" {
					name = table + "." + name
				}
				if _, dup := keys[name]; dup {
					t.Errorf("the page documents %s twice", name)
				}
				keys[name] = unescapeGroff(m[2])
			}
		}
		tp = false
	}
	return keys
}

// unescapeGroff undoes the escapes a default's text uses in man(7) source.
func unescapeGroff(s string) string {
	return strings.NewReplacer(`\-`, "-", `\e`, `\`, `\(dq`, `"`, `\&`, "", `\(ti`, "~").Replace(s)
}

// flattenConfig turns `config` output into "table.key" to value; an array
// of tables contributes the keys of all its elements.
func flattenConfig(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		switch v := v.(type) {
		case map[string]any:
			flattenConfig(name, v, out)
		case []any:
			tables := len(v) > 0
			for _, e := range v {
				if _, ok := e.(map[string]any); !ok {
					tables = false
				}
			}
			if !tables {
				out[name] = v
				continue
			}
			for _, e := range v {
				flattenConfig(name, e.(map[string]any), out)
			}
		default:
			out[name] = v
		}
	}
}

// printedKeys reads `PROGRAM config` output into "table.key" to value.
func printedKeys(t *testing.T, program string, printed []byte) map[string]any {
	var m map[string]any
	if err := toml.Unmarshal(printed, &m); err != nil {
		t.Fatalf("%s config printed what TOML does not read: %v\n%s", program, err, printed)
	}
	got := map[string]any{}
	flattenConfig("", m, got)
	return got
}

// pageExample returns the first .nf block of the page's EXAMPLES section,
// unescaped: a configuration file.
func pageExample(src []byte) string {
	var b strings.Builder
	in, block := false, false
	for _, line := range strings.Split(string(src), "\n") {
		switch {
		case strings.HasPrefix(line, ".SH"):
			if block {
				return b.String()
			}
			in = strings.HasPrefix(line, ".SH EXAMPLE")
		case in && line == ".nf":
			block = true
		case in && block && line == ".fi":
			return b.String()
		case in && block:
			b.WriteString(unescapeGroff(line) + "\n")
		}
	}
	return b.String()
}

func TestConfigPages(t *testing.T) {
	for _, program := range configPages {
		t.Run(program, func(t *testing.T) {
			page := filepath.Join("..", "cmd", program, program+".toml.5")
			src, err := os.ReadFile(page)
			if err != nil {
				t.Fatalf("%v: every program has a configuration page", err)
			}
			if _, err := exec.LookPath("groff"); err == nil {
				out, err := exec.Command("groff", "-man", "-ww", "-z", page).CombinedOutput()
				if err != nil || len(out) > 0 {
					t.Errorf("groff -man -ww -z %s: %v\n%s", page, err, out)
				}
			}
			cmd := exec.Command(program, "config")
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
			printed, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s config: %v", program, err)
			}
			got := printedKeys(t, program, printed)
			documented := pageKeys(t, src)
			// The page's example has the tables the default has not
			// ([[peer]], [[server]] ...): every key `config` prints for
			// it is documented too.
			if example := pageExample(src); example != "" {
				file := filepath.Join(t.TempDir(), "example.toml")
				if err := os.WriteFile(file, []byte(example), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(program, "config", "-config", file)
				cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
				out, err := cmd.CombinedOutput()
				switch {
				case err != nil && bytes.Contains(out, []byte("no such file or directory")):
					t.Logf("the example names files this machine lacks; its keys are not checked:\n%s", out)
				case err != nil:
					t.Errorf("%s config -config EXAMPLE (the page's EXAMPLES): %v\n%s", program, err, out)
				default:
					for k := range printedKeys(t, program, out) {
						if _, ok := documented[k]; !ok {
							t.Errorf("%s: key %s (printed by `%s config` for the page's example) is not documented", page, k, program)
						}
					}
				}
			}
			var names []string
			for k := range got {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				text, ok := documented[k]
				if !ok {
					t.Errorf("%s: key %s (printed by `%s config`) is not documented", page, k, program)
					continue
				}
				if text == "computed" {
					continue
				}
				var want map[string]any
				if err := toml.Unmarshal([]byte("v = "+text), &want); err != nil {
					t.Errorf("%s: the default of %s, %q, is not a TOML value: %v", page, k, text, err)
					continue
				}
				if diff := cmp.Diff(fmt.Sprint(want["v"]), fmt.Sprint(got[k])); diff != "" {
					t.Errorf("%s: %s's default differs from `%s config` (-page +program):\n%s", page, k, program, diff)
				}
			}
		})
	}
}
