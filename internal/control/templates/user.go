package templates

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/layer"
)

// maxAccountsFile bounds the /etc/passwd or /etc/group read from an image.
const maxAccountsFile = 4 << 20

// resolveUser finds who the image's User names ("", "name", "uid",
// "name:group", "uid:gid"), in the image's own /etc/passwd and
// /etc/group, resolved inside the image whose layers are dirs (bottom
// first).
// An empty User is root.
func resolveUser(user string, dirs []string) (driver.ImageUser, error) {
	u := driver.ImageUser{Name: "root", Home: "/root"}
	name, group, hasGroup := strings.Cut(user, ":")
	if name == "" && hasGroup {
		return u, errdefs.Invalid("image_user", "the image's user %q names a group without a user", user)
	}
	passwd, err := accounts(dirs, "/etc/passwd")
	if err != nil {
		return u, err
	}
	if name != "" {
		found := false
		for _, f := range passwd {
			if len(f) >= 6 && (f[0] == name || f[2] == name) {
				uid, err1 := parseID(f[2])
				gid, err2 := parseID(f[3])
				if err1 != nil || err2 != nil {
					continue
				}
				u = driver.ImageUser{Name: f[0], UID: uid, GID: gid, Home: f[5]}
				found = true
				break
			}
		}
		if !found {
			uid, err := parseID(name)
			if err != nil {
				return u, errdefs.Invalid("image_user", "the image's user %q is not in its /etc/passwd", name)
			}
			u = driver.ImageUser{Name: name, UID: uid, GID: uid, Home: "/"}
		}
	}
	if hasGroup {
		groups, err := accounts(dirs, "/etc/group")
		if err != nil {
			return u, err
		}
		gid, err := parseID(group)
		for _, f := range groups {
			if len(f) >= 3 && f[0] == group {
				gid, err = parseID(f[2])
				break
			}
		}
		if err != nil {
			return u, errdefs.Invalid("image_user", "the image's group %q is not in its /etc/group", group)
		}
		u.GID = gid
	}
	if u.Home == "" {
		u.Home = "/"
	}
	return u, nil
}

// accounts reads the colon-separated lines of name, a path in the image
// whose layers are dirs (bottom first), as the sandbox would see it: in
// the topmost layer that has it, through links that stay inside the
// image's root (layer.ReadFile), never the host's files. No such regular
// file: no lines.
func accounts(dirs []string, name string) ([][]string, error) {
	b, err := layer.ReadFile(dirs, name, maxAccountsFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errdefs.HasCode(err, layer.CodeTooLarge):
		return nil, errdefs.Invalid("image_user", "the image's %s is over %d bytes", name, maxAccountsFile)
	case err != nil:
		return nil, fmt.Errorf("read the image's %s: %w", name, err)
	}
	var out [][]string
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		out = append(out, strings.Split(line, ":"))
	}
	return out, nil
}

// parseID parses a uid or gid a sandbox can hold.
func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n >= imageIDs {
		return 0, fmt.Errorf("id %q is not a number below %d", s, imageIDs)
	}
	return uint32(n), nil
}
