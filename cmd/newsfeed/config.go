package main

import (
	"io"

	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// config is `newsfeed config`: the effective configuration, every default
// filled in, or with -check every mistake of a file (tomlconf.Command).
func config(args []string, stdout, stderr io.Writer) int {
	return tomlconf.Command("newsfeed", args, stdout, stderr, func(file string, check bool) ([]byte, error) {
		cfg, err := newsfeed.LoadConfig(file)
		if err != nil {
			return nil, err
		}
		if check {
			if err := cfg.CheckSpoolDir(); err != nil {
				return nil, err
			}
		}
		return cfg.Format(), nil
	})
}
