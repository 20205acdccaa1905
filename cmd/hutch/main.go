// Command hutch is hutch's one binary. `hutch serve` runs the platform;
// every other subcommand is a client of a server's /v1 API through the Go
// SDK in package client:
//
//	hutch sandbox create|ls|get|rm|stop|start
//	hutch exec ID -- CMD…        stream a command, exit with its code
//	hutch cp SRC DST             copy files and directories in and out
//	hutch run -- CMD…            create, exec, destroy
//	hutch app create|ls|task|promote|…  apps: the layer above sandboxes
//	hutch key create|ls|rm, hutch tenant create|quota, hutch info, hutch version
//
// The CLI finds its server in HUTCH_URL and its key in HUTCH_API_KEY, or
// in the admin key file a local `hutch serve` writes (config.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
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
	stdinTTY bool // stdin is a terminal: exec does not read it

	cfg config // filled by client()
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

// command is one subcommand: it parses args (the words after its name)
// and does its work. It returns nil for exit status 0.
type command func(ctx context.Context, e *env, args []string) error

// commands maps each top-level word to its command.
var commands = map[string]command{
	"serve":    func(ctx context.Context, _ *env, args []string) error { return runServe(ctx, args) },
	"sandbox":  runSandbox,
	"sb":       runSandbox,
	"exec":     runExec,
	"start":    runStart,
	"ps":       runPs,
	"stats":    runStats,
	"logs":     runLogs,
	"kill":     runKill,
	"shell":    runShell,
	"cp":       runCp,
	"watch":    runWatch,
	"run":      runRun,
	"app":      runApp,
	"key":      runKey,
	"secret":   runSecret,
	"template": runTemplate,
	"tenant":   runTenant,
	"settings": runSettings,
	"info":     runInfo,
	"events":   runEvents,
	"version":  runVersion,
}

const mainUsage = `usage: hutch <command> [flags] [args]

commands:
  serve                      run the hutch server (hutch serve -h)
  sandbox create [flags]     create a sandbox and print its id
  sandbox ls [flags]         list sandboxes
  sandbox get ID             show a sandbox
  sandbox rm ID…             destroy sandboxes
  sandbox stop|start ID…     stop or start sandboxes
  sandbox extend ID DUR      a new lifetime from now (90s, 30m, 2h)
  exec [flags] ID -- CMD…    run a command in a sandbox, streaming its output
  start [flags] ID -- CMD…   start a background process and print its pid
  ps ID                      list a sandbox's processes
  stats [--no-stream] [ID…]  live CPU, memory, network, pids and disk of sandboxes
  logs [-f] ID PID           print (or follow) a process's output
  kill [-s SIG] ID PID       signal a process (--group: its process group)
  shell ID [-- CMD…]         a terminal in the sandbox (raw mode, resizes)
  cp [-r] SRC DST            copy files; one side is ID:PATH, - is stdin/stdout
  watch [flags] ID [PATH]    print changes under a directory as they happen
  run [flags] -- CMD…        create a sandbox, run a command, destroy it
  app create|ls|get|rm       apps: a live and a dev sandbox behind one name
  app task APP -- CMD…       run a command in an app's dev sandbox (hutch app -h)
  key create|ls|rm           manage API keys
  secret set|ls|rm           manage secrets; set reads the value from stdin
  template pull|import|ls|rm manage the images sandboxes start from
  tenant create NAME         create a tenant (admin)
  tenant quota get|set       show a tenant's quotas and usage; set them (admin)
  info                       show the server's driver, limits and features
  settings [set KEY=VALUE…]  show the lifecycle settings; change them live (admin)
  events [-f] [flags]        print the event log; -f follows it live
  version                    print hutch's version

environment:
  HUTCH_URL       server URL (default ` + defaultURL + `)
  HUTCH_API_KEY   API key; when unset, read from $HUTCH_DATA/admin.key
                  or ./hutch-data/admin.key

Run 'hutch <command> -h' for a command's flags.
`

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

// run runs the command named by args[0] and returns the process's exit
// status.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, mainUsage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(e.stdout, mainUsage)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "hutch: unknown command %q\n\n%s", args[0], mainUsage)
		return 2
	}
	return exitStatus(ctx, e, cmd(ctx, e, args[1:]))
}

// exitStatus reports err on stderr the CLI's one way and returns the exit
// status for it: 0 for nil, 2 for usage errors, the remote code for an
// exec, 130 after Ctrl-C, 1 for the rest.
func exitStatus(ctx context.Context, e *env, err error) int {
	var (
		exit  exitCode
		usage *usageError
		apiE  *client.Error
		urlE  *url.Error
	)
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return int(exit)
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsageShown):
		return 2
	case errors.As(err, &usage):
		fmt.Fprintf(e.stderr, "hutch: %s\n", usage.msg)
		usage.fs.Usage()
		return 2
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		fmt.Fprintln(e.stderr, "hutch: interrupted")
		return 130
	case errors.As(err, &apiE):
		fmt.Fprintf(e.stderr, "hutch: %s\n", apiE)
		if apiE.Code == "missing_api_key" || apiE.Code == "invalid_api_key" {
			fmt.Fprintf(e.stderr, "hutch: the key came from %s; set HUTCH_API_KEY to the right one\n", e.cfg.keySourceText())
		}
		return 1
	case errors.As(err, &urlE) && errors.Is(err, syscall.ECONNREFUSED):
		fmt.Fprintf(e.stderr, "hutch: cannot reach the server at %s: connection refused (is hutch serve running? set HUTCH_URL)\n", e.cfg.URL)
		return 1
	}
	fmt.Fprintf(e.stderr, "hutch: %s\n", err)
	return 1
}

// exitCode is the exit status a command asks for once it has said all it
// has to say (exec passing on the remote code).
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }
