package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// configMain is `newsget config [-config FILE]`: print the configuration
// newsget runs with, every default filled in, as TOML it reads back; and
// `newsget config -check FILE`: report every mistake in FILE.
func configMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsget config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `file` to print (none: the defaults)")
	check := fs.String("check", "", "report every mistake in `file` and exit 2 if there is one")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: newsget config [-config FILE] | newsget config -check FILE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 || (*check != "" && *config != "") {
		fs.Usage()
		return 2
	}
	if *check != "" {
		text, err := os.ReadFile(*check)
		if err != nil {
			printErr(stderr, err)
			return 2
		}
		if err := newsget.CheckConfig(*check, text); err != nil {
			errs := tomlconf.Errors(err)
			if len(errs) == 0 {
				printErr(stderr, err)
			}
			for _, e := range errs {
				printErr(stderr, e)
			}
			return 2
		}
		fmt.Fprintf(stdout, "%s: the configuration is valid\n", *check)
		return 0
	}
	cfg, err := effectiveConfig(*config)
	if err != nil {
		for _, e := range tomlconf.Errors(err) {
			printErr(stderr, e)
		}
		if len(tomlconf.Errors(err)) == 0 {
			printErr(stderr, err)
		}
		return 2
	}
	stdout.Write(cfg.AppendTOML(nil))
	return 0
}

// effectiveConfig is the file's configuration (none: the defaults),
// checked, its directories resolved and every default filled in.
func effectiveConfig(file string) (*newsget.Config, error) {
	cfg, err := loadConfig(file, nil)
	if err != nil {
		return nil, err
	}
	for _, check := range []func() error{cfg.Check, cfg.CheckServe, cfg.ResolveDirs} {
		if err := check(); err != nil {
			return nil, err
		}
	}
	cfg.FillDefaults()
	return cfg, nil
}
