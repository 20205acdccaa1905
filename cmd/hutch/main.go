// Command hutch is hutch's one binary. `hutch serve` runs the platform;
// every other command is a client of a server's /v1 API through the Go
// SDK in package client. The command tree is built with cobra in root.go,
// one file per command or group; `hutch --help` lists them.
//
// The CLI finds its server in HUTCH_URL and its key in HUTCH_API_KEY, or
// in the admin key file a local `hutch serve` writes (config.go).
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hutchdev/hutch/client"
)

// env is what a command may touch of the outside world, so tests can run
// commands in-process with their own streams and environment.
type env struct {
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	getenv   func(string) string
	stdinTTY bool // stdin is a terminal: exec does not read it unless -i

	json bool   // --json: results and errors as the API's JSON
	cfg  config // filled by client()
}

// client returns an SDK client for the configured server and key.
func (e *env) client() (*client.Client, error) {
	cfg, err := loadConfig(e.getenv)
	if err != nil {
		return nil, err
	}
	e.cfg = cfg
	return client.New(cfg.URL, cfg.Key, client.WithUserAgent("hutch-cli/"+hutchVersion())), nil
}

func main() {
	// Signals first: Ctrl-C or SIGTERM cancels ctx, and once it has, a
	// second one kills the process the default way.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	e := &env{
		stdin:    os.Stdin,
		stdout:   os.Stdout,
		stderr:   os.Stderr,
		getenv:   os.Getenv,
		stdinTTY: isTerminal(os.Stdin),
	}
	code := run(ctx, e, os.Args[1:])
	stop()
	os.Exit(code)
}

// run runs the command line args (without the program's name) and
// returns the process's exit status.
func run(ctx context.Context, e *env, args []string) int {
	root := newRoot(e)
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return exitStatus(ctx, e, cmd, err)
}
