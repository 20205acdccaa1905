package mountinfo

import "testing"

func TestUnescape(t *testing.T) {
	tests := []struct{ in, want string }{
		{`/plain`, `/plain`},
		{`/a\040b`, `/a b`},
		{`/tab\011nl\012bs\134`, "/tab\tnl\nbs\\"},
		{`/trailing\04`, `/trailing\04`},
		{`/not\999octal`, `/not\999octal`},
		{`/over\400byte`, `/over\400byte`},
	}
	for _, tt := range tests {
		if got := Unescape(tt.in); got != tt.want {
			t.Errorf("Unescape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
