package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// newTemplateCmd is `hutch template`: the images sandboxes start from.
func newTemplateCmd(e *env) *cobra.Command {
	return newGroup("template", "Manage the images sandboxes start from", "",
		newTemplatePullCmd(e), newTemplateImportCmd(e), newTemplateListCmd(e), newTemplateRemoveCmd(e))
}

func newTemplatePullCmd(e *env) *cobra.Command {
	var user, secret, platform string
	cmd := &cobra.Command{
		Use:   "pull NAME REF [--username U --password-secret S] [--platform P]",
		Short: "Make a template from an image in a registry",
		Long: "Makes the template NAME from the image REF in its registry (debian:bookworm,\n" +
			"registry.example.com/team/app:1.2). The password is the value of your secret S, a\n" +
			"registry secret bound to the image's registry (hutch secret set S --registry HOST).",
		Args: nArgs(2, 2, "template pull takes a name and an image reference"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			start := time.Now()
			t, err := c.PullTemplate(cmd.Context(), api.CreateTemplateRequest{Name: args[0], Ref: args[1], Username: user, PasswordSecret: secret, Platform: platform})
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, t)
			}
			fmt.Fprintln(e.stdout, t.Name)
			fmt.Fprintf(e.stderr, "hutch: template %s from %s (%s, %d layers, %s) in %s\n", t.Name, t.Source, shortDigest(t.Digest), t.Layers,
				byteSize(t.Bytes), time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	cmd.Flags().StringVar(&user, "username", "", "registry `user`")
	cmd.Flags().StringVar(&secret, "password-secret", "", "the `name` of your registry secret holding the registry password")
	cmd.Flags().StringVar(&platform, "platform", "", "`os/arch` of a multi-platform image (default: the server's)")
	return cmd
}

func newTemplateImportCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "import NAME PATH",
		Short: "Make a template from an image on this machine",
		Long: "Makes the template NAME from an image on this machine: an OCI image layout\n" +
			"directory, a tar of one, or a tar that `docker save` wrote (- reads it from stdin).",
		Args: nArgs(2, 2, "template import takes a name and a path"),
		RunE: func(cmd *cobra.Command, args []string) (retErr error) {
			var body io.Reader = e.stdin
			if args[1] != "-" {
				fi, err := os.Stat(args[1])
				if err != nil {
					return local(err)
				}
				if fi.IsDir() {
					t := newTarStream(args[1])
					defer func() {
						if err := t.finish(); err != nil {
							retErr = err
						}
					}()
					body = t
				} else {
					f, err := os.Open(args[1])
					if err != nil {
						return local(err)
					}
					defer f.Close()
					body = localReader{f}
				}
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			t, err := c.ImportTemplate(cmd.Context(), args[0], body)
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, t)
			}
			fmt.Fprintln(e.stdout, t.Name)
			fmt.Fprintf(e.stderr, "hutch: template %s imported (%s, %d layers, %s)\n", t.Name, shortDigest(t.Digest), t.Layers, byteSize(t.Bytes))
			return nil
		},
	}
}

func newTemplateListCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List templates",
		Args:    nArgs(0, 0, "template ls takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			list, err := c.ListTemplates(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now()
			return printList(e.stdout, e.json, list.Templates, []string{"NAME", "DIGEST", "LAYERS", "SIZE", "CREATED", "SOURCE"}, func(t api.Template) []string {
				return []string{t.Name, shortDigest(t.Digest), strconv.Itoa(t.Layers), byteSize(t.Bytes), formatAge(now, t.CreatedAt) + " ago", t.Source}
			})
		},
	}
}

func newTemplateRemoveCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME…",
		Short: "Delete templates",
		Args:  nArgs(1, -1, "template rm takes one or more names"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			return removeUntilError(e, args, func(name string) error {
				return c.DeleteTemplate(cmd.Context(), name)
			})
		},
	}
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
