package version

import (
	"runtime/debug"
	"testing"
)

func TestAsked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"-version"}, true},
		{[]string{"--version"}, true},
		{[]string{"version"}, true},
		{[]string{"-config", "x", "-version"}, false}, // only as the first argument
		{[]string{"-v"}, false},
	} {
		if got := Asked(tc.args); got != tc.want {
			t.Errorf("Asked(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"release", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}},
			"newsfeed v1.2.3 go1.26.8"},
		{"checkout", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"},
				{Key: "vcs.time", Value: "2026-11-24T01:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"newsfeed (devel) 0123456789ab+dirty 2026-11-24T01:00:00Z go1.26.8"},
	} {
		if got := format("newsfeed", &tc.info); got != tc.want {
			t.Errorf("%s: format = %q, want %q", tc.name, got, tc.want)
		}
	}
}
