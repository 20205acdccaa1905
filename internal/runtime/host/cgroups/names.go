package cgroups

import "fmt"

// idLen is the length of a sandbox id: a lowercase ULID.
const idLen = 26

// checkID accepts exactly 26 characters of [0-9a-z], so an id can never
// name anything but a child of the parent group.
func checkID(id string) error {
	if len(id) != idLen {
		return fmt.Errorf("%w: sandbox id %q is not %d characters", ErrInvalid, id, idLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z') {
			return fmt.Errorf("%w: sandbox id %q has a character outside [0-9a-z]", ErrInvalid, id)
		}
	}
	return nil
}

// isID is checkID as a predicate, for skipping foreign names in List.
func isID(name string) bool { return checkID(name) == nil }

// checkParent accepts one path element of letters, digits, '-', '_' and '.',
// other than "." and "..".
func checkParent(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 255 {
		return fmt.Errorf("%w: parent group name %q", ErrInvalid, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' ||
			c == '-' || c == '_' || c == '.'
		if !ok {
			return fmt.Errorf("%w: parent group name %q has a character outside [A-Za-z0-9._-]", ErrInvalid, name)
		}
	}
	return nil
}
