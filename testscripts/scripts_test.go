// Package testscripts runs newsflow's end-to-end scenarios: testscript files
// (github.com/rogpeppe/go-internal/testscript) in testdata/, one per case,
// named area_case.txtar (proto_reader_session.txtar, feed_backlog_replay.txtar).
//
// Run them with `go test ./testscripts/`, one with
// `go test ./testscripts/ -run TestScripts/proto_reader_session`, and keep a
// failed script's work directory with -testwork. -update rewrites the files a
// `cmp` compares against inside the script (check the diff before committing).
//
// Besides testscript's built-in commands, scripts have the NNTP commands in
// nntp_test.go (nntpserver, nntpclient, nntpcount, nntpfault, nntpreceived)
// and post_test.go (nntppost, nntpbodies)
// and the cmd/ programs listed in programs below, on $PATH.
package testscripts

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// programs lists the cmd/ programs scripts run, by directory name under
// cmd/. Each is built once per test run with `go build` into a directory put
// first on $PATH, so a script runs it with `exec newsfeed ...`. Add a line
// when the program's main package exists.
var programs = []string{
	"newsfeed",
	"newsget",
	"newsweb",
	// "newsbench",
}

// inProcess lists programs run inside the test binary instead (faster, and
// counted by -cover): name to a main function that may call os.Exit. A cmd/
// program can be registered here once it exposes such a function from an
// importable package.
var inProcess = map[string]func(){}

var update = flag.Bool("update", false, "rewrite cmp targets inside the scripts with the actual output")

// builder builds programs before the tests run and removes them after.
type builder struct{ m *testing.M }

func (b builder) Run() int {
	dir, err := os.MkdirTemp("", "newsflow-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testscripts:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	for _, p := range programs {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, p), "github.com/newsflow/newsflow/cmd/"+p)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "testscripts: build %s: %v\n", p, err)
			return 2
		}
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return b.m.Run()
}

func TestMain(m *testing.M) {
	testscript.Main(builder{m}, inProcess)
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                "testdata",
		Setup:              setupNNTP,
		Cmds:               nntpCommands,
		UpdateScripts:      *update,
		RequireUniqueNames: true,
	})
}
