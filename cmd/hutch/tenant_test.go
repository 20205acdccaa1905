package main

import (
	"testing"
)

// TestQuotaFlag: a quota on the command line is a number (0: no limit) or
// "default" (back to the server's); what is not given stays as it was.
func TestQuotaFlag(t *testing.T) {
	five, keep := 5, 7
	for _, tc := range []struct {
		in     string
		float  bool
		want   *int
		wantF  *float64
		refuse bool
	}{
		{in: "0", want: new(int)},
		{in: "5", want: &five},
		{in: "default"},
		{in: "-1", refuse: true},
		{in: "1.5", refuse: true},
		{in: "lots", refuse: true},
		{in: "1.5", float: true, wantF: ptr(1.5)},
		{in: "default", float: true},
	} {
		f := &quotaFlag{float: tc.float}
		err := f.Set(tc.in)
		if (err != nil) != tc.refuse {
			t.Errorf("Set(%q): %v", tc.in, err)
			continue
		}
		if tc.refuse {
			continue
		}
		if tc.float {
			p := ptr(9.0)
			f.applyFloat(&p)
			if (p == nil) != (tc.wantF == nil) || p != nil && *p != *tc.wantF {
				t.Errorf("%q applied: %v, want %v", tc.in, p, tc.wantF)
			}
			continue
		}
		p := &keep
		f.apply(&p)
		if (p == nil) != (tc.want == nil) || p != nil && *p != *tc.want {
			t.Errorf("%q applied: %v, want %v", tc.in, p, tc.want)
		}
	}
	var untouched quotaFlag
	p := &keep
	untouched.apply(&p)
	if p != &keep {
		t.Error("a quota not given changed")
	}
}

func ptr[T any](v T) *T { return &v }
