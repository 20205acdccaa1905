package main

import (
	"errors"
	"fmt"
	"strings"
)

// eachID applies fn to every id, reporting each failure on stderr (under
// --json, only in the error returned) and failing when any did.
func eachID(e *env, what string, ids []string, fn func(id string) error) error {
	var (
		failed []string
		errs   []error
	)
	for _, id := range ids {
		err := fn(id)
		if err == nil {
			continue
		}
		if !e.json {
			fmt.Fprintf(e.stderr, "hutch: %s: %s\n", id, err)
		}
		failed = append(failed, id)
		errs = append(errs, fmt.Errorf("%s: %w", id, err))
	}
	switch {
	case len(failed) == 0:
		return nil
	case e.json:
		return errors.Join(errs...)
	}
	return fmt.Errorf("%s failed for %s", what, strings.Join(failed, ", "))
}

// removeEach removes every id with remove, carrying on past failures as
// eachID does, and prints each id removed (under --json, a JSON array of
// them at the end).
func removeEach(e *env, what string, ids []string, remove func(id string) error) error {
	removed := []string{}
	err := eachID(e, what, ids, func(id string) error {
		if err := remove(id); err != nil {
			return err
		}
		removed = append(removed, id)
		if !e.json {
			fmt.Fprintln(e.stdout, id)
		}
		return nil
	})
	return printDone(e, removed, err)
}

// removeUntilError removes every name with remove in turn, stopping at the
// first failure, and prints each name removed (under --json, a JSON array
// of them all once all are removed).
func removeUntilError(e *env, names []string, remove func(name string) error) error {
	for _, name := range names {
		if err := remove(name); err != nil {
			return err
		}
		if !e.json {
			fmt.Fprintln(e.stdout, name)
		}
	}
	if e.json {
		return printJSON(e.stdout, names)
	}
	return nil
}
