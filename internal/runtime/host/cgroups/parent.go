package cgroups

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The parent group's mark: an extended attribute hutch sets on a parent
// group it makes, so that a later start knows the group is its own to
// limit. A parent group without it was made by someone else (or by a hutch
// from before the mark) and is never changed.
const (
	ownerAttr = "trusted.hutch.owner"
	ownerMark = "hutch"
)

// ParentCap is what CapParent did, for the caller's log.
type ParentCap struct {
	// Capped are the parent groups that now carry the limits.
	Capped []string
	// Foreign are parent groups that were there without hutch's mark:
	// left as they were, uncapped.
	Foreign []string
	// Unmarked are parent groups hutch made and capped but could not
	// mark (the file system takes no trusted.* attributes): a later start
	// will take them for foreign and leave the limits set now as they are.
	Unmarked []string
}

// CapParent caps the parent group, every sandbox together, at l: memory
// (and swap: none on v2; memory plus swap at the same limit on v1 where
// the kernel accounts swap) and pids; CPU is not capped. It makes the
// parent where it is missing and marks it as hutch's; it changes a parent
// only when it made it now or finds hutch's mark, never a group of the
// host's that someone else made (ParentCap.Foreign). On v2 it first
// enables the controllers for the root's children, as Create would at the
// first sandbox. Limits of controllers the host lacks are skipped. Cutting
// below what the sandboxes already use can fail on v1 (EBUSY): the error
// says so and the rest is still done.
func (m *Manager) CapParent(l Limits) (ParentCap, error) {
	var out ParentCap
	if err := l.validate(); err != nil {
		return out, err
	}
	var errs []error
	for _, h := range m.hiers {
		if m.version == 2 {
			if err := enableControllers(h.mount, h.controllers); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		dir := filepath.Join(h.mount, m.parent)
		owned, marked, err := claimParent(dir)
		switch {
		case err != nil:
			errs = append(errs, err)
			continue
		case !owned:
			out.Foreign = append(out.Foreign, dir)
			continue
		case !marked:
			out.Unmarked = append(out.Unmarked, dir)
		}
		if !h.has(Memory) && !h.has(Pids) {
			continue
		}
		if err := capDir(m.version, h, dir, l); err != nil {
			errs = append(errs, fmt.Errorf("cgroups: cap %s: %w", dir, err))
			continue
		}
		out.Capped = append(out.Capped, dir)
	}
	return out, errors.Join(errs...)
}

// claimParent makes dir, marked as hutch's, or finds it there. owned says
// whether hutch may change it: it made it now or dir carries the mark;
// marked, whether dir carries the mark now.
func claimParent(dir string) (owned, marked bool, err error) {
	err = os.Mkdir(dir, 0o755)
	if err == nil {
		marked = unix.Setxattr(dir, ownerAttr, []byte(ownerMark), 0) == nil
		return true, marked, nil
	}
	if !errors.Is(err, os.ErrExist) {
		return false, false, fmt.Errorf("cgroups: %w", err)
	}
	buf := make([]byte, 64)
	n, err := unix.Getxattr(dir, ownerAttr, buf)
	if err != nil || !bytes.Equal(buf[:n], []byte(ownerMark)) {
		return false, false, nil
	}
	return true, true, nil
}

// capDir writes the memory and pids limits of one parent group dir in
// hierarchy h.
func capDir(version int, h hierarchy, dir string, l Limits) error {
	if h.has(Memory) {
		set := setMemoryV1
		if version == 2 {
			set = setMemoryV2
		}
		if err := set(dir, l.MemoryBytes); err != nil {
			return err
		}
	}
	if h.has(Pids) {
		return setPids(dir, l.Pids)
	}
	return nil
}
