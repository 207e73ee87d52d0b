package serve

import (
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"golang.org/x/crypto/bcrypt"
)

// TestHtpasswd: the page takes users of an htpasswd file with bcrypt
// lines (htpasswd -B writes $2y$) and {SHA} lines (htpasswd -s); a wrong
// password, an unknown user or no credentials get 401. The API is not
// behind it (it takes the api_key).
func TestHtpasswd(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	y := "$2y$" + strings.TrimPrefix(string(hash), "$2a$") // as htpasswd -B writes it
	sum := sha1.Sum([]byte("old pass"))
	file := filepath.Join(t.TempDir(), "htpasswd")
	os.WriteFile(file, []byte("# users\nalice:"+y+"\nbob:{SHA}"+base64.StdEncoding.EncodeToString(sum[:])+"\n"), 0o600)

	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, func(c *newsget.Config) { c.Serve.Htpasswd = file })
	defer td.stop()
	for _, tc := range []struct {
		user, pass string
		want       int
	}{
		{"alice", "s3cret", http.StatusOK},
		{"alice", "s3cret ", http.StatusUnauthorized},
		{"alice", "old pass", http.StatusUnauthorized},
		{"bob", "old pass", http.StatusOK},
		{"bob", "s3cret", http.StatusUnauthorized},
		{"carol", "s3cret", http.StatusUnauthorized},
		{"", "", http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest("GET", td.url+"/", nil)
		if tc.user != "" {
			req.SetBasicAuth(tc.user, tc.pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s:%q: %s, want %d", tc.user, tc.pass, resp.Status, tc.want)
		}
	}
	if v := td.api(t, "mode", "version"); v["version"] != Version {
		t.Errorf("API behind htpasswd: %v", v)
	}
}

// TestHtpasswdRefused: hash kinds we cannot check are refused at start,
// naming the line, not accepted to never match.
func TestHtpasswdRefused(t *testing.T) {
	for _, line := range []string{
		"alice:$apr1$abc$0123456789abcdef012345",
		"alice:plaintext",
		"alice:$2y$99$xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		":{SHA}abc",
	} {
		file := filepath.Join(t.TempDir(), "htpasswd")
		os.WriteFile(file, []byte("# users\n"+line+"\n"), 0o600)
		_, err := readHtpasswd(file)
		if err == nil || !strings.Contains(err.Error(), file+":2:") {
			t.Errorf("%q: %v, want an error naming line 2", line, err)
		}
	}
}
