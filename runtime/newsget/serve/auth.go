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

	"golang.org/x/crypto/bcrypt"
)

// readHtpasswd reads an htpasswd file of "user:$2y$..." (bcrypt,
// htpasswd -B) or "user:{SHA}base64" (htpasswd -s, kept for old files)
// lines. Other hash kinds (apr1 $apr1$, crypt) are refused with a clear
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
		if !ok || user == "" || !(strings.HasPrefix(hash, "{SHA}") || isBcrypt(hash)) {
			return nil, fmt.Errorf("serve: htpasswd %s:%d: want user:$2y$... (htpasswd -B) or user:{SHA}... (htpasswd -s)", path, n)
		}
		if isBcrypt(hash) {
			if _, err := bcrypt.Cost([]byte(hash)); err != nil {
				return nil, fmt.Errorf("serve: htpasswd %s:%d: %w", path, n, err)
			}
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
	if found && isBcrypt(want) {
		return bcrypt.CompareHashAndPassword([]byte(want), []byte(pass)) == nil
	}
	sum := sha1.Sum([]byte(pass))
	got := "{SHA}" + base64.StdEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 && found
}

// isBcrypt reports whether an htpasswd hash is bcrypt ($2y$, as
// htpasswd -B writes; $2a$ and $2b$ from other tools).
func isBcrypt(hash string) bool {
	return strings.HasPrefix(hash, "$2y$") || strings.HasPrefix(hash, "$2a$") || strings.HasPrefix(hash, "$2b$")
}
