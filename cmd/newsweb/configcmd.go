package main

import (
	"errors"
	"io"

	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// configCommand is `newsweb config`: the effective configuration, every
// default filled in, or with -check every mistake of a file, the files it
// names included (tomlconf.Command).
func configCommand(args []string, stdout, stderr io.Writer) int {
	return tomlconf.Command("newsweb", args, stdout, stderr, func(name string, check bool) ([]byte, error) {
		var cfg config
		if name != "" {
			var err error
			cfg, err = loadConfig(name)
			err = errors.Join(err, cfg.checkFiles())
			if check && cfg.keys != nil && len(cfg.Servers) == 0 {
				// newsweb -server can add servers, but the service runs
				// with the file alone: a file without one does not start.
				err = errors.Join(err, &tomlconf.Error{File: name, Line: 1, Key: "server",
					Msg: "no [[server]]: newsweb needs at least one NNTP server (add [[server]] with url = \"nntps://news.example\")"})
			}
			if err != nil {
				return nil, err
			}
		}
		return cfg.withDefaults().format()
	})
}
