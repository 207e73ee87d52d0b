package newsweb

import (
	"net/http"
	"strings"
	"testing"
)

// A JSON post of the wrong shape is answered 400 with the field and the
// shape it needs, in the API's own words (not the decoder's Go types).
func TestAPIPostShapeErrors(t *testing.T) {
	s := postingSite(t, 0, nil)
	for body, want := range map[string]string{
		`{"newsgroups":"misc.test","subject":"x","body":"y"}`:              `newsgroups must be a list of group names, e.g. ["misc.test"]`,
		`{"newsgroups":["misc.test"],"subject":1,"body":"y"}`:              `subject must be a string`,
		`{"newsgroups":["misc.test"],"subject":"x","body":"y","from":"z"}`: `unknown field "from": an article has newsgroups, subject, body, references and name`,
		`{"newsgroups":["misc.test"],`:                                     `The request is not JSON`,
	} {
		resp, out := postJSON(t, http.DefaultClient, s.url, "alice", body)
		msg, _ := out["error"].(string)
		if resp.StatusCode != 400 || !strings.Contains(msg, want) || strings.Contains(msg, "Go ") || strings.Contains(msg, "[]string") {
			t.Errorf("%s: %d %q, want 400 saying %q", body, resp.StatusCode, msg, want)
		}
	}
}
