package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
)

func testEnv(vars map[string]string) (*env, *bytes.Buffer) {
	var errb bytes.Buffer
	return &env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errb,
		getenv: func(k string) string { return vars[k] }, stdinTTY: true}, &errb
}

// TestCommandArgs: flags may come before or after the sandbox id; the
// first word after it starts the command, kept as written, and "--" ends
// the flags anywhere.
func TestCommandArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		lead int
		want []string
		env  string
	}{
		{[]string{"ID", "--", "ls", "-la"}, 1, []string{"ID", "ls", "-la"}, ""},
		{[]string{"--env", "A=1", "ID", "ls", "-la"}, 1, []string{"ID", "ls", "-la"}, "A=1"},
		{[]string{"ID", "--env", "B=2", "--", "sh", "-c", "echo --env"}, 1, []string{"ID", "sh", "-c", "echo --env"}, "B=2"},
		{[]string{"ID", "--env", "C=3", "sh", "--env", "x"}, 1, []string{"ID", "sh", "--env", "x"}, "C=3"},
		{[]string{"--env", "D=4", "--", "sh", "-c", "x"}, 0, []string{"sh", "-c", "x"}, "D=4"},
	} {
		var (
			kv  kvFlag
			got []string
		)
		cmd := &cobra.Command{Use: "t", RunE: func(cmd *cobra.Command, args []string) (err error) {
			got, err = commandArgs(cmd, args, tc.lead)
			return err
		}}
		cmd.Flags().SetInterspersed(false)
		cmd.Flags().Var(&kv, "env", "")
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" || kv.String() != tc.env {
			t.Errorf("%v: positional diff %s, env %q want %q", tc.args, diff, kv.String(), tc.env)
		}
	}
}

func TestKVFlagRejects(t *testing.T) {
	var kv kvFlag
	for _, bad := range []string{"novalue", "=x"} {
		if kv.Set(bad) == nil {
			t.Errorf("Set(%q) succeeded", bad)
		}
	}
	if err := kv.Set("K=a=b"); err != nil || kv.m["K"] != "a=b" {
		t.Errorf("Set(K=a=b) = %v, %v", err, kv.m)
	}
}

func TestParseLocation(t *testing.T) {
	id := "01m81b6tzw5q2hcj7by01dvd6v"
	for in, want := range map[string]location{
		id + ":/w/a.txt": {ID: id, Path: "/w/a.txt"},
		id + ":":         {ID: id, Path: "."},
		"./local:file":   {Path: "./local:file"},
		"notanid:x":      {Path: "notanid:x"},
		"-":              {Path: "-"},
	} {
		if got := parseLocation(in); got != want {
			t.Errorf("parseLocation(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestKeyFallback(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "admin.key"), []byte("hk_abc_def\n"), 0o600)
	cfg, err := loadConfig(func(k string) string { return map[string]string{"HUTCH_DATA": dir}[k] })
	if err != nil || cfg.Key != "hk_abc_def" || cfg.URL != defaultURL {
		t.Fatalf("fallback = %+v, %v", cfg, err)
	}
	cfg, _ = loadConfig(func(k string) string {
		return map[string]string{"HUTCH_DATA": dir, "HUTCH_API_KEY": "hk_env_key", "HUTCH_URL": "http://x:1"}[k]
	})
	if cfg.Key != "hk_env_key" || cfg.URL != "http://x:1" {
		t.Fatalf("env should win: %+v", cfg)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"exec", "only-an-id"}, {"cp", "a", "b"}, {"sandbox", "frobnicate"}} {
		e, _ := testEnv(map[string]string{"HUTCH_API_KEY": "k"})
		if code := run(context.Background(), e, args); code != 2 {
			t.Errorf("hutch %v exited %d, want 2", args, code)
		}
	}
}
