// Package mountinfo reads the fields of /proc/<pid>/mountinfo the kernel
// escapes.
package mountinfo

import (
	"strconv"
	"strings"
)

// Unescape undoes the octal escapes (\040 for a space, \011, \012, \134)
// the kernel writes into mountinfo's paths; a backslash not followed by
// three octal digits of a byte stays as it is.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
