package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
)

const templateUsage = "hutch template pull|import|ls|rm …"

// runTemplate is `hutch template <verb>`: the images sandboxes start from.
func runTemplate(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprintf(e.stderr, "usage: %s\n", templateUsage)
		return errUsageShown
	}
	switch args[0] {
	case "pull":
		return templatePull(ctx, e, args[1:])
	case "import":
		return templateImport(ctx, e, args[1:])
	case "ls", "list":
		return templateList(ctx, e, args[1:])
	case "rm":
		return templateRemove(ctx, e, args[1:])
	}
	fmt.Fprintf(e.stderr, "hutch: unknown template command %q\nusage: %s\n", args[0], templateUsage)
	return errUsageShown
}

func templatePull(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "template pull", "hutch template pull NAME REF [--username U --password-secret S] [--platform P]\n\n"+
		"Makes the template NAME from the image REF in its registry (debian:bookworm,\n"+
		"registry.example.com/team/app:1.2). The password is the value of your secret S.")
	user := fs.String("username", "", "registry `user`")
	secret := fs.String("password-secret", "", "the `name` of your secret holding the registry password")
	platform := fs.String("platform", "", "`os/arch` of a multi-platform image (default: the server's)")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef(fs, "template pull takes a name and an image reference")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	start := time.Now()
	t, err := c.PullTemplate(ctx, api.CreateTemplateRequest{Name: pos[0], Ref: pos[1], Username: *user, PasswordSecret: *secret, Platform: *platform})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, t.Name)
	fmt.Fprintf(e.stderr, "hutch: template %s from %s (%s, %d layers, %s) in %s\n", t.Name, t.Source, shortDigest(t.Digest), t.Layers,
		byteSize(t.Bytes), time.Since(start).Round(time.Millisecond))
	return nil
}

func templateImport(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "template import", "hutch template import NAME PATH\n\n"+
		"Makes the template NAME from an image on this machine: an OCI image layout\n"+
		"directory, a tar of one, or a tar that `docker save` wrote (- reads it from stdin).")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef(fs, "template import takes a name and a path")
	}
	var body io.Reader = e.stdin
	if pos[1] != "-" {
		fi, err := os.Stat(pos[1])
		if err != nil {
			return err
		}
		if fi.IsDir() {
			pr, pw := io.Pipe()
			go func() { pw.CloseWithError(writeTar(pw, pos[1])) }()
			defer pr.Close()
			body = pr
		} else {
			f, err := os.Open(pos[1])
			if err != nil {
				return err
			}
			defer f.Close()
			body = f
		}
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	t, err := c.ImportTemplate(ctx, pos[0], body)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, t.Name)
	fmt.Fprintf(e.stderr, "hutch: template %s imported (%s, %d layers, %s)\n", t.Name, shortDigest(t.Digest), t.Layers, byteSize(t.Bytes))
	return nil
}

func templateList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "template ls", "hutch template ls [--json]")
	asJSON := fs.Bool("json", false, "print the templates as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "template ls takes no arguments")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	list, err := c.ListTemplates(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, list.Templates)
	}
	now := time.Now()
	tw := newTable(e.stdout)
	row(tw, "NAME", "DIGEST", "LAYERS", "SIZE", "CREATED", "SOURCE")
	for _, t := range list.Templates {
		row(tw, t.Name, shortDigest(t.Digest), strconv.Itoa(t.Layers), byteSize(t.Bytes), formatAge(now, t.CreatedAt)+" ago", t.Source)
	}
	return tw.Flush()
}

func templateRemove(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "template rm", "hutch template rm NAME…")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef(fs, "template rm takes one or more names")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	for _, name := range pos {
		if err := c.DeleteTemplate(ctx, name); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, name)
	}
	return nil
}

// shortDigest is a digest's first 12 hex digits.
func shortDigest(d string) string {
	_, hex, _ := strings.Cut(d, ":")
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return hex
}

// byteSize prints n bytes in binary units.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
