package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/hutchdev/hutch/internal/server"
	serveconfig "github.com/hutchdev/hutch/internal/server/config"
)

// logHandler is the server's log: JSON for machines, text for a person
// at a terminal ("auto" tells them apart by stderr).
func logHandler(format string, opts *slog.HandlerOptions) slog.Handler {
	if format == "text" || (format == "auto" && term.IsTerminal(int(os.Stderr.Fd()))) {
		return slog.NewTextHandler(os.Stderr, opts)
	}
	return slog.NewJSONHandler(os.Stderr, opts)
}

// newServeCmd is `hutch serve`. Its flags are the server's configuration
// (internal/server/config), parsed there with the environment overrides they
// name, so cobra leaves them alone; -h prints them.
func newServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "serve [flags]",
		Short:              "Run the hutch server (hutch serve -h lists its flags)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd.Context(), args)
		},
	}
}

// runServe is `hutch serve`: load the configuration, start every part,
// serve until ctx ends (SIGINT or SIGTERM), then shut down in order.
func runServe(ctx context.Context, args []string) error {
	cfg, err := serveconfig.Load(args, os.Getenv)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return err
	}
	log := slog.New(logHandler(cfg.LogFormat, &slog.HandlerOptions{Level: level}))
	srv, err := server.Start(ctx, cfg, log, hutchVersion())
	if err != nil {
		return err
	}
	<-ctx.Done()
	log.Info("shutting down")
	srv.Shutdown(context.WithoutCancel(ctx))
	return nil
}
