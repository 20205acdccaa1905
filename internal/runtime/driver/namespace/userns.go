package namespace

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// userNamespacesAllowed tells whether this host lets an unprivileged user
// make user namespaces, as far as its sysctls say (a security module can
// still refuse; Probe finds that out).
func userNamespacesAllowed() error {
	for _, c := range []struct{ path, why string }{
		{"/proc/sys/user/max_user_namespaces", "user.max_user_namespaces is 0"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "kernel.unprivileged_userns_clone is 0"},
	} {
		b, err := os.ReadFile(c.path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", c.path, err)
		}
		if strings.TrimSpace(string(b)) == "0" {
			return fmt.Errorf("unprivileged user namespaces are off (%s)", c.why)
		}
	}
	return nil
}
