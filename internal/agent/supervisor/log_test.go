package supervisor

import "testing"

// TestAppLogBounded: the log ring keeps to its limit whatever the lines
// hold; a byte that is not UTF-8 becomes three (U+FFFD) and must count as
// three.
func TestAppLogBounded(t *testing.T) {
	const limit = 4 << 10
	for _, line := range []string{"\xff", "\xff\xfe\xfd\xfc", "plain text", ""} {
		l := newAppLog(limit)
		for range 10000 {
			l.add("stdout", line)
		}
		var held int64
		for _, kept := range l.lines {
			held += int64(len(kept.Line)) + logLineCost
		}
		if held > limit || held != l.held {
			t.Errorf("line %q: the ring holds %d bytes (it counts %d), limit %d", line, held, l.held, limit)
		}
	}
}
