// Package version says which build of a newsflow program is running: the
// module version and the VCS revision recorded in the binary's build info
// (go build stamps both; go run and test binaries may lack the revision).
package version

import (
	"fmt"
	"runtime/debug"
	"slices"
)

// Asked reports whether args ask for the version, the way every newsflow
// program takes it: -version, --version or version as the first argument.
func Asked(args []string) bool {
	return len(args) > 0 && slices.Contains([]string{"-version", "--version", "version"}, args[0])
}

// String is the one-line version of program: its name, the module version
// ("(devel)" for a build from a checkout), the VCS revision with a
// "+dirty" mark when the tree had changes, the commit time and the Go
// version, as far as the build info has them.
func String(program string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return program + " (no build info)"
	}
	return format(program, info)
}

func format(program string, info *debug.BuildInfo) string {
	s := fmt.Sprintf("%s %s", program, info.Main.Version)
	settings := map[string]string{}
	for _, kv := range info.Settings {
		settings[kv.Key] = kv.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if settings["vcs.modified"] == "true" {
			rev += "+dirty"
		}
		s += " " + rev
		if t := settings["vcs.time"]; t != "" {
			s += " " + t
		}
	}
	return s + " " + info.GoVersion
}
