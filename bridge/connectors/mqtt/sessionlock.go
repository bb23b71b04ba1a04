package mqtt

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mqb-project/mqb/bridge"
)

// A broker gives a client id's session to the newest connection that asks
// for it and drops the one before, which reconnects and takes it back: two
// mqb processes on one host reading one topic of one broker derive one
// client id, and so threw each other off every few seconds, each delivering
// part of the messages twice. A connection therefore first takes a lock on
// its client id at its broker in a directory private to the user; a second
// process fails at once, naming the first.

// errSessionInUse is matched by the error of a connection whose client id
// another process on this host holds.
var errSessionInUse = errors.New("client id in use on this host")

// sessionLockDir is where the locks live: $XDG_RUNTIME_DIR, else a
// directory of the user's own under the temporary directory.
func sessionLockDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "mqb")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("mqb-%d", os.Getuid()))
}

// sessionLockName is the lock file of clientID at broker.
func sessionLockName(broker, clientID string) string {
	sum := sha256.Sum256([]byte(bridge.SessionKey("mqtt", broker, clientID)))
	return "mqtt-" + hex.EncodeToString(sum[:12]) + ".lock"
}

// lockSession takes the host-wide lock of clientID at the conn's broker,
// once: it is held until close. Where the lock cannot be taken (no private
// directory to keep it in, a system without flock) the conn goes on
// without it, and says so at debug level.
func (c *conn) lockSession(clientID string) error {
	if c.session != nil {
		return nil
	}
	f, pid, err := lockFile(sessionLockDir(), sessionLockName(c.cfg.broker, clientID))
	switch {
	case errors.Is(err, errSessionInUse):
		who := "another process on this host"
		if pid > 0 {
			who = fmt.Sprintf("pid %d on this host", pid)
		}
		return bridge.Permanent(fmt.Errorf("client id %q at %s is held by %s, and the broker would hand its session back and forth between the two: give one of them another client_id (%w)",
			clientID, c.cfg.broker, who, errSessionInUse))
	case err != nil:
		c.log.Debug("mqtt: going on without the client id lock", "error", err)
		return nil
	}
	c.session = f
	return nil
}

// unlockSession releases the client id lock, if held.
func (c *conn) unlockSession() {
	if c.session != nil {
		unlockFile(c.session)
		c.session = nil
	}
}
