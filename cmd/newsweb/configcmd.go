package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// configCommand is `newsweb config`: it prints the effective
// configuration, every default filled in, as TOML that newsweb reads back
// to the same configuration (like postconf -d or innconfval), or with
// -check reports every mistake of a file, one FILE:LINE: KEY: MESSAGE line
// each, and exits 2.
func configCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsweb config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("config", "", "configuration `file` to print (the defaults when empty)")
	check := fs.String("check", "", "report every mistake in this configuration `file` and print nothing else")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: newsweb config [-config FILE] | newsweb config -check FILE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
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
	var cfg config
	if name != "" {
		var err error
		cfg, err = loadConfig(name)
		err = errors.Join(err, cfg.checkFiles())
		if *check != "" && cfg.keys != nil && len(cfg.Servers) == 0 {
			// newsweb -server can add servers, but the service runs with
			// the file alone: a file without one does not start.
			err = errors.Join(err, &tomlconf.Error{File: name, Line: 1, Key: "server",
				Msg: "no [[server]]: newsweb needs at least one NNTP server (add [[server]] with url = \"nntps://news.example\")"})
		}
		if err != nil {
			if es := tomlconf.Errors(err); len(es) > 0 {
				slices.SortStableFunc(es, func(a, b *tomlconf.Error) int { return cmp.Compare(a.Line, b.Line) })
				for _, e := range es {
					fmt.Fprintln(stderr, e)
				}
				fmt.Fprintf(stderr, "newsweb config: %d mistake(s); newsweb does not start with this file\n", len(es))
			} else {
				fmt.Fprintf(stderr, "newsweb config: %v\n", err)
			}
			return 2
		}
	}
	if *check != "" {
		fmt.Fprintf(stdout, "%s: ok\n", name)
		return 0
	}
	b, err := cfg.withDefaults().format()
	if err != nil {
		fmt.Fprintf(stderr, "newsweb config: %v\n", err)
		return 1
	}
	stdout.Write(b)
	return 0
}
