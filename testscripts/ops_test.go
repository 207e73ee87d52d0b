package testscripts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The programs' operator files, kept beside their code under cmd/: a man
// page per program and a systemd unit. These tests keep them true: a page
// renders without warnings and names every flag the program takes (so a
// new flag without documentation fails here), and every unit passes
// systemd-analyze verify with the page it points to installed.

// opsFiles lists each program's man page, unit, and the argument lists
// whose -h output names its flags.
var opsFiles = []struct {
	program, page, unit string
	helps               [][]string
}{
	{"newsfeed", "newsfeed.8", "newsfeed.service",
		[][]string{{"-v", "-h"}, {"inject", "-h"}, {"status", "-h"}, {"demo", "-h"}, {"innd-channel", "-h"}, {"ctl", "-h"}, {"trace", "-h"}, {"config", "-h"}, {"report", "-h"}}},
	{"newsget", "newsget.1", "newsget@.service", [][]string{{"-h"}, {"serve", "-h"}, {"config", "-h"}, {"unpack", "-h"}}},
	{"newsweb", "newsweb.8", "newsweb.service", [][]string{{"-h"}, {"config", "-h"}}},
	{"newsget", "newsget.1", "newsget-serve.service", nil},
}

// flagName matches a flag in flag.PrintDefaults output: "  -name ...".
var flagName = regexp.MustCompile(`(?m)^  -([A-Za-z0-9-]+)`)

func TestManPages(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		t.Skip("groff is not installed (Debian: apt-get install groff-base man-db); the man pages are not checked")
	}
	for _, p := range opsFiles {
		t.Run(p.program, func(t *testing.T) {
			page := filepath.Join("..", "cmd", p.program, p.page)
			src, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			// -ww: every warning; -z: no output, only the diagnostics.
			out, err := exec.Command("groff", "-man", "-ww", "-z", page).CombinedOutput()
			if err != nil || len(out) > 0 {
				t.Fatalf("groff -man -ww -z %s: %v\n%s", page, err, out)
			}
			text, err := exec.Command("groff", "-man", "-Tutf8", page).Output()
			if err != nil {
				t.Fatalf("groff -man -Tutf8 %s: %v", page, err)
			}
			plain := stripOverstrike(text)
			for _, section := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"} {
				if !bytes.Contains(plain, []byte("\n"+section+"\n")) {
					t.Errorf("%s has no %s section", page, section)
				}
			}
			for _, args := range p.helps {
				help, _ := exec.Command(p.program, args...).CombinedOutput()
				flags := flagName.FindAllStringSubmatch(string(help), -1)
				if len(flags) == 0 {
					t.Fatalf("%s %s printed no flags:\n%s", p.program, strings.Join(args, " "), help)
				}
				for _, f := range flags {
					// In man(7) source a flag's dashes are written \-.
					if !bytes.Contains(src, []byte(`\-`+strings.ReplaceAll(f[1], "-", `\-`))) {
						t.Errorf("%s does not document -%s (from %s %s)", page, f[1], p.program, strings.Join(args, " "))
					}
				}
			}
			if !bytes.Contains(src, []byte(`\-version`)) {
				t.Errorf("%s does not document -version", page)
			}
			for _, pg := range []string{page, filepath.Join("..", "cmd", p.program, p.program+".toml.5")} {
				checkWordsApart(t, pg)
			}
		})
	}
}

// runTogether matches a run of letters long enough to be words joined by
// a font-alternation macro (.BR a b c: "abc") rather than one word.
var runTogether = regexp.MustCompile(`[A-Za-z]{16,}`)

// checkWordsApart renders page on one long line per paragraph, without
// hyphenation, and reports every run of 16 or more letters that the source
// does not hold: words a macro joined, such as the unquoted arguments of
// .BR "x" ). A sentence, which groff renders as "x).Asentence" without a warning.
func checkWordsApart(t *testing.T, page string) {
	t.Helper()
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text, err := exec.Command("groff", "-man", "-Tutf8", "-rLL=2000n", "-rHY=0", page).Output()
	if err != nil {
		t.Fatalf("groff -man -Tutf8 %s: %v", page, err)
	}
	lower := bytes.ToLower(src)
	for _, w := range runTogether.FindAll(stripOverstrike(text), -1) {
		if !bytes.Contains(lower, bytes.ToLower(w)) {
			t.Errorf("%s renders %q: words run together (quote a macro argument that holds spaces, or move the text to its own line)", page, w)
		}
	}
}

// stripOverstrike removes groff's bold/underline overstrikes (x\bx, _\bx).
func stripOverstrike(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); i++ {
		if i+1 < len(b) && b[i+1] == '\b' {
			i++ // skip the struck character and the backspace
			continue
		}
		out = append(out, b[i])
	}
	return out
}

func TestSystemdUnits(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd); the units are not verified")
	}
	// The units name their pages in Documentation=man:...; verify runs man
	// to check them, so install the pages under a private MANPATH.
	man := t.TempDir()
	units := t.TempDir()
	for _, p := range opsFiles {
		section := p.page[strings.LastIndexByte(p.page, '.')+1:]
		dir := filepath.Join(man, "man"+section)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(filepath.Join("..", "cmd", p.program, p.page))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p.page), src, 0o644); err != nil {
			t.Fatal(err)
		}
		unit, err := os.ReadFile(filepath.Join("..", "cmd", p.program, p.unit))
		if err != nil {
			t.Fatal(err)
		}
		// ExecStart must name an executable that exists: the one built for
		// these tests, in place of /usr/local/bin.
		bin, err := exec.LookPath(p.program)
		if err != nil {
			t.Fatal(err)
		}
		unit = bytes.ReplaceAll(unit, []byte("/usr/local/bin/"+p.program), []byte(bin))
		if err := os.WriteFile(filepath.Join(units, p.unit), unit, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range opsFiles {
		name := p.unit
		if strings.HasSuffix(name, "@.service") { // a template is verified as an instance
			name = strings.TrimSuffix(name, "@.service") + "@x.nzb.service"
			if err := os.Symlink(p.unit, filepath.Join(units, name)); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("systemd-analyze", "verify", filepath.Join(units, name))
		cmd.Env = append(os.Environ(), "MANPATH="+man, "SYSTEMD_LOG_LEVEL=notice")
		if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
		}
	}
}
