package main

import (
	"fmt"
	"io"
	"os"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// configMain is `newsget config`: the configuration newsget runs with,
// every default filled in, or with -check every mistake of a file
// (tomlconf.Command).
func configMain(args []string, stdout, stderr io.Writer) int {
	return tomlconf.Command("newsget", args, stdout, stderr, func(file string, check bool) ([]byte, error) {
		if check {
			text, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			cfg, err := newsget.CheckConfig(file, text)
			if err != nil {
				return nil, err
			}
			// A file without a server is right for one-shot downloads
			// given -server URLs, not for newsget serve: say so.
			if len(cfg.Servers) == 0 {
				fmt.Fprintf(stderr, "newsget config: %s has no [[server]]: newsget serve does not start with it, and a download needs -server URLs\n", file)
			}
			return nil, nil
		}
		cfg, err := effectiveConfig(file)
		if err != nil {
			return nil, err
		}
		return cfg.AppendTOML(nil), nil
	})
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
