package serve

import (
	"bufio"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// readHtpasswd reads an htpasswd file of "user:{SHA}base64" lines
// (htpasswd -s). Other hash kinds (bcrypt, apr1) are refused with a clear
// error rather than silently never matching.
func readHtpasswd(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("serve: htpasswd: %w", err)
	}
	defer f.Close()
	users := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" || !strings.HasPrefix(hash, "{SHA}") {
			return nil, fmt.Errorf("serve: htpasswd %s:%d: want user:{SHA}... (htpasswd -s)", path, n)
		}
		users[user] = hash
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("serve: htpasswd: %w", err)
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("serve: htpasswd %s: no users", path)
	}
	return users, nil
}

// checkUser reports whether r carries basic-auth credentials of a user
// in the htpasswd file (always true without one).
func (d *Daemon) checkUser(r *http.Request) bool {
	if d.users == nil {
		return true
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	want, found := d.users[user]
	sum := sha1.Sum([]byte(pass))
	got := "{SHA}" + base64.StdEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 && found
}
