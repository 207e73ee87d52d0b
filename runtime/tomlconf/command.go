package tomlconf

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
)

// Command is every program's `PROGRAM config` subcommand, as postconf -d
// and innconfval are INN's and Postfix's:
//
//	PROGRAM config [-config FILE]   the effective configuration, every default filled in
//	PROGRAM config -check FILE      every mistake of FILE, one FILE:LINE: KEY: MESSAGE each
//
// load reads and checks the configuration of file ("" for the program's
// defaults) and returns it as TOML that the program reads back to the same
// configuration; with check set the text is not printed. Command returns
// the exit status: 0, or 2 for a mistake in the file or the arguments.
func Command(program string, args []string, stdout, stderr io.Writer, load func(file string, check bool) ([]byte, error)) int {
	fs := flag.NewFlagSet(program+" config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("config", "", "configuration `file` to print (the defaults when empty)")
	check := fs.String("check", "", "report every mistake in this configuration `file` and print nothing else")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s config [-config FILE] | %s config -check FILE\n", program, program)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || (*check != "" && *file != "") {
		fs.Usage()
		return 2
	}
	name := *file
	if *check != "" {
		name = *check
	}
	text, err := load(name, *check != "")
	if err != nil {
		es := Errors(err)
		if len(es) == 0 {
			fmt.Fprintf(stderr, "%s config: %v\n", program, err)
			return 2
		}
		slices.SortStableFunc(es, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
		for _, e := range es {
			fmt.Fprintln(stderr, e)
		}
		fmt.Fprintf(stderr, "%s config: %d mistake(s); %s does not start with this file\n", program, len(es), program)
		return 2
	}
	if *check != "" {
		fmt.Fprintf(stdout, "%s: ok\n", name)
		return 0
	}
	stdout.Write(text)
	return 0
}
