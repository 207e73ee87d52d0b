// Command newsbench runs side-by-side comparisons of newsflow against the
// programs operators use today (innfeed, NZBGet, sabyenc), on loopback, in
// one run, and prints a table followed by machine-readable lines
//
//	ratio <case> <metric> <value>
//
// where value is newsflow divided by the competitor (higher is better for
// rates, lower for CPU time and memory).
//
// Usage:
//
//	newsbench feed [flags]   newsfeed vs innfeed
//	newsbench get [flags]    newsget vs NZBGet
//	newsbench yenc [flags]   newsflow's yEnc decoder vs sabyenc
//
// Each subcommand lives in its own file and registers itself with register.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/newsflow/newsflow/runtime/version"
)

// A subcommand is one comparison: it parses its own flags from args and
// writes its report to stdout.
type subcommand struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var subcommands = map[string]subcommand{}

// register adds a subcommand; each comparison's file calls it from init.
func register(name, summary string, run func(args []string, stdout, stderr io.Writer) error) {
	if _, dup := subcommands[name]; dup {
		panic("newsbench: subcommand " + name + " registered twice")
	}
	subcommands[name] = subcommand{summary: summary, run: run}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: newsbench <comparison> [flags]")
	fmt.Fprintln(w, "comparisons:")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-6s %s\n", n, subcommands[n].summary)
	}
}

func main() {
	if version.Asked(os.Args[1:]) {
		fmt.Println(version.String("newsbench"))
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	sc, ok := subcommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "newsbench: unknown comparison %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err := sc.run(args[1:], stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "newsbench %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// A Table is the human-readable report: a header row and data rows, printed
// with aligned columns.
type Table struct {
	Header []string
	Rows   [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Print writes the table with columns padded to their widest cell.
func (t *Table) Print(w io.Writer) {
	width := make([]int, len(t.Header))
	for i, h := range t.Header {
		width[i] = len(h)
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(width) && len(c) > width[i] {
				width[i] = len(c)
			}
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(width) {
				fmt.Fprintf(&b, "%-*s", width[i], c)
			} else {
				b.WriteString(c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.Header)
	for _, r := range t.Rows {
		line(r)
	}
}

// Ratio prints one machine-readable comparison line: value is newsflow's
// figure divided by the competitor's.
func Ratio(w io.Writer, caseName, metric string, newsflow, competitor float64) {
	if competitor == 0 {
		fmt.Fprintf(w, "ratio %s %s nan\n", caseName, metric)
		return
	}
	fmt.Fprintf(w, "ratio %s %s %.3f\n", caseName, metric, newsflow/competitor)
}

// Median returns the median of xs (0 for none); xs is sorted in place.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
