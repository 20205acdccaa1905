//go:build !linux

package confine

import (
	"errors"
	"runtime"
)

func apply(*Config) (Report, error) {
	return Report{}, errors.New("confine: not supported on " + runtime.GOOS)
}

func probe() Report {
	return Report{Missing: []string{MissingLandlock, MissingSeccomp}}
}

// Prlimit is not supported off Linux.
func Prlimit(int, []Rlimit) error {
	return errors.New("confine: prlimit not supported on " + runtime.GOOS)
}
