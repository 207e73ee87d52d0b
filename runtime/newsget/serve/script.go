package serve

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Post-processing scripts, as SABnzbd runs them, so that scripts written
// for it work unchanged: after every job (failed ones too) the category's
// script (else [serve] script) runs with the arguments
//
//	1 the job's final folder   2 the NZB's file name   3 the job's name
//	4 "" (indexer report)      5 the category          6 the group ("")
//	7 the status: 0 OK, 1 repair failed, 2 unpack failed, -1 failed
//	8 "" (failure URL)
//
// and SAB_* variables in its environment (SAB_COMPLETE_DIR, SAB_FINAL_NAME,
// SAB_FILENAME, SAB_CAT, SAB_PP_STATUS, SAB_NZO_ID, SAB_BYTES,
// SAB_FAIL_MSG, SAB_STATUS, SAB_PASSWORD, SAB_PP, SAB_PRIORITY, SAB_API_KEY,
// SAB_API_URL, SAB_VERSION, ...). Its output (stdout and stderr, at most
// maxScriptOutput bytes) is kept in the history entry (script_log), its
// last line as script_line ("Exit(N): line" when it failed). With
// script_can_fail a non-zero exit fails the job with that line.

// maxScriptOutput bounds what a script's output takes in the history.
const maxScriptOutput = 64 << 10

// scriptFor is the script of category cat ("" for none).
func (d *Daemon) scriptFor(cat string) string {
	for _, c := range d.cfg.Categories {
		if c.Name == cat && c.Script != "" {
			if strings.EqualFold(c.Script, "None") {
				return ""
			}
			return c.Script
		}
	}
	if strings.EqualFold(d.cfg.Serve.Script, "None") {
		return ""
	}
	return d.cfg.Serve.Script
}

// ppStatus is SABnzbd's status argument for a job's result.
func ppStatus(h HistoryEntry) int {
	r := strings.ToLower(h.FailMessage)
	switch {
	case h.Status == "Completed":
		return 0
	case h.Encrypted || strings.Contains(r, "unpack"):
		return 2
	case strings.Contains(r, "repair") || strings.Contains(r, "verify") || strings.Contains(r, "incomplete"):
		return 1
	}
	return -1
}

// runScript runs the job's script (if any) on the finished job's folder
// h.Storage and records what it did in h.
func (d *Daemon) runScript(ctx context.Context, j *Job, h *HistoryEntry) {
	script := d.scriptFor(j.Category)
	if script == "" {
		return
	}
	status := ppStatus(*h)
	cmd := exec.CommandContext(ctx, script, h.Storage, j.NZBName, j.Name, "", j.Category, "", strconv.Itoa(status), "")
	cmd.Dir = h.Storage
	pp := 3
	if j.PP != nil {
		pp = *j.PP
	}
	env := map[string]string{
		"complete_dir": h.Storage, "final_name": j.Name, "filename": j.NZBName, "cat": j.Category,
		"pp_status": strconv.Itoa(status), "nzo_id": j.ID, "bytes": strconv.FormatInt(j.Bytes, 10),
		"bytes_downloaded": strconv.FormatInt(j.Bytes-j.Left, 10), "fail_msg": h.FailMessage, "status": h.Status,
		"password": j.Password, "pp": strconv.Itoa(pp), "priority": strconv.Itoa(int(j.Priority)),
		"duplicate": boolDigit(j.Duplicate != ""), "encrypted": boolDigit(h.Encrypted), "group": "", "url": j.URL,
		"script": script, "download_time": strconv.Itoa(h.DownloadTime), "failure_url": "",
		"api_key": d.cfg.Serve.APIKey, "api_url": apiURL(cmp.Or(d.opts.APIAddr, d.cfg.Serve.Listen)), "version": Version,
	}
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, "SAB_"+strings.ToUpper(k)+"="+v)
	}
	var out capped
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	log := out.b.String()
	lines := strings.Split(strings.TrimSpace(log), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	exit, line := 0, ""
	switch {
	case err != nil && cmd.ProcessState == nil:
		exit, line = -1, fmt.Sprintf("Cannot run script %s: %v", script, err)
	case err != nil:
		exit = cmd.ProcessState.ExitCode()
		line = fmt.Sprintf("Script exit code is %d", exit)
		if last != "" {
			line = fmt.Sprintf("Exit(%d): %s", exit, last)
		}
	case last != "":
		line = last
	default:
		line = "Ran " + script
	}
	h.Script, h.ScriptLog, h.ScriptLine = script, log, line
	d.log.Info("script ran", "nzo_id", j.ID, "script", script, "exit", exit, "line", line)
	if exit != 0 && d.cfg.Serve.ScriptCanFail && h.Status != "Failed" {
		h.Status, h.FailMessage = "Failed", line
	}
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// capped keeps the first maxScriptOutput bytes written to it.
type capped struct{ b bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxScriptOutput - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// apiURL is the API's URL for a script on this machine, from the address
// the API listens on: a listener on every address (":8085", "0.0.0.0",
// "[::]") is reached on 127.0.0.1.
func apiURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/api"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/api"
}
