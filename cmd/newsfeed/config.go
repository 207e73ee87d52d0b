package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// config prints the effective configuration, every default filled in
// (like postconf -d or innconfval), or with -check reports every mistake
// of a file, one FILE:LINE: KEY: MESSAGE line each.
func config(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsfeed config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("config", "", "configuration `file` to print (the embedded default when empty)")
	check := fs.String("check", "", "report every mistake in this configuration `file` and print nothing else")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: newsfeed config [-config FILE] | newsfeed config -check FILE")
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
	cfg, err := newsfeed.LoadConfig(name)
	if err != nil {
		if es := tomlconf.Errors(err); len(es) > 0 {
			for _, e := range es {
				fmt.Fprintln(stderr, e)
			}
			fmt.Fprintf(stderr, "newsfeed config: %d mistake(s); newsfeed does not start with this file\n", len(es))
		} else {
			fmt.Fprintf(stderr, "newsfeed config: %v\n", err)
		}
		return 2
	}
	if *check != "" {
		fmt.Fprintf(stdout, "%s: ok\n", name)
		return 0
	}
	stdout.Write(cfg.Format())
	return 0
}
