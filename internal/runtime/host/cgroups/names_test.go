package cgroups

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"01hzy3k8q9v2m4n6p8r0s2t4w6", true},
		{"0123456789abcdefghijklmnop", true},
		{"", false},
		{"01hzy3k8q9v2m4n6p8r0s2t4w", false},   // 25
		{"01hzy3k8q9v2m4n6p8r0s2t4w6x", false}, // 27
		{"01HZY3K8Q9V2M4N6P8R0S2T4W6", false},  // upper case
		{"../../../../../../../../..", false},
		{"01hzy3k8q9v2m4n6p8r0s2t4/6", false},
		{"01hzy3k8q9v2m4n6p8r0s2t4w\x00", false},
		{"01hzy3k8q9v2m4n6p8r0s2t4wé", false},
	}
	for _, tt := range tests {
		err := checkID(tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("checkID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("checkID(%q) = %v, want ErrInvalid", tt.id, err)
		}
	}
}

func TestCheckParent(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"hutch", true},
		{"hutch-test-ABC_1.2", true},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"a b", false},
		{strings.Repeat("a", 256), false},
	}
	for _, tt := range tests {
		if err := checkParent(tt.name); (err == nil) != tt.ok {
			t.Errorf("checkParent(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
	if _, err := New("../etc"); !errors.Is(err, ErrInvalid) {
		t.Errorf("New(../etc) = %v, want ErrInvalid", err)
	}
}
