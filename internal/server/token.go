package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/statedir"
)

// TokenName is the file in the state directory that keeps the token a
// daemon made for itself (.clean_room/ is git-ignored).
const TokenName = statedir.ServeToken

// minTokenLen bounds a usable token from below.
const minTokenLen = 16

// LoadToken returns the token kept in stateDir/serve.token, and when
// there is none makes one (32 bytes from crypto/rand, in hex) and writes
// it with mode 0600; made reports that it did, so that the caller prints
// it once. A file others may read is refused: the token is a password.
func LoadToken(stateDir string) (token string, made bool, err error) {
	path := statedir.At(stateDir).ServeToken()
	fi, err := os.Stat(path)
	switch {
	case err == nil:
		if fi.Mode().Perm()&0o077 != 0 {
			return "", false, fmt.Errorf("%s has mode %v, readable by others: run 'chmod 600 %s', or remove it for a new token", path, fi.Mode().Perm(), path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return "", false, fmt.Errorf("read the token: %w", err)
		}
		token = strings.TrimSpace(string(data))
		if len(token) < minTokenLen {
			return "", false, fmt.Errorf("%s holds no token of %d characters or more: remove it for a new one", path, minTokenLen)
		}
		return token, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("read the token: %w", err)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false, fmt.Errorf("make a token: %w", err)
	}
	token = hex.EncodeToString(b[:])
	if err := atomicfile.Write(path, []byte(token+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("write the token: %w", err)
	}
	return token, true, nil
}
