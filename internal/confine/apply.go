package confine

import "errors"

// Apply confines the calling process, every thread of it, and everything it
// starts afterwards. It cannot be undone.
//
// Placeholder until the confine package lands; callers must treat its
// error as fatal.
func Apply(c *Config) (Report, error) {
	return Report{}, errors.New("confine: not implemented yet")
}

// Probe reports what this kernel offers without confining anything.
func Probe() Report {
	return Report{Missing: []string{"landlock", "seccomp"}}
}
