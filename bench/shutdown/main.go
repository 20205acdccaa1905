// Command shutdown measures how long `hutch serve` takes to exit on
// SIGTERM, with no client connected and with streams of every kind open
// (exec output, process output, file watch, event stream, terminal): the
// drain must end them all at once, not wait for them. It runs the real
// binary, over a temporary data directory, once per round.
//
//	go build -o bin/ ./cmd/... ./bench/... && bin/shutdown -hutch bin/hutch
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

func main() {
	hutch := flag.String("hutch", "", "path of hutch (default: beside this binary); hutch-agent is found beside it")
	rounds := flag.Int("rounds", 10, "SIGTERMs to time for each case")
	each := flag.Int("each", 4, "streams of each kind open at the SIGTERM")
	flag.Parse()
	if *hutch == "" {
		self, _ := os.Executable()
		*hutch = filepath.Join(filepath.Dir(self), "hutch")
	}
	if err := run(*hutch, *rounds, *each); err != nil {
		fmt.Fprintln(os.Stderr, "shutdown:", err)
		os.Exit(1)
	}
}

func run(hutch string, rounds, each int) error {
	dir, err := os.MkdirTemp("", "hutch-bench-shutdown-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "data")
	fmt.Printf("hutch shutdown benchmark — %d CPUs, %s, %s\n\n", runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
	fmt.Println("| streams open at SIGTERM | rounds | p50 | max |")
	fmt.Println("|---|---|---|---|")
	for _, streams := range []int{0, each} {
		var took []time.Duration
		for range rounds {
			d, err := round(hutch, data, streams)
			if err != nil {
				return err
			}
			took = append(took, d)
		}
		slices.Sort(took)
		what := "none"
		if streams > 0 {
			what = fmt.Sprintf("%d of each of 5 kinds (%d)", streams, 5*streams)
		}
		fmt.Printf("| %s | %d | %s | %s |\n", what, rounds, took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	}
	// The sandbox outlives each server, as designed; the last one goes.
	s, err := start(hutch, data)
	if err != nil {
		return err
	}
	ctx := context.Background()
	for sb, err := range s.c.AllSandboxes(ctx, client.ListOptions{}) {
		if err == nil {
			s.c.DeleteSandbox(ctx, sb.ID)
		}
	}
	_, err = s.stop()
	return err
}

// server is one running hutch serve.
type server struct {
	cmd    *exec.Cmd
	c      *client.Client
	exited chan error
}

func start(hutch, data string) (*server, error) {
	cmd := exec.Command(hutch, "serve", "--listen", "127.0.0.1:0", "--data", data, "--warm-pool", "0")
	cmd.Env = append(os.Environ(), "HUTCH_API_KEY=", "HUTCH_URL=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, exited: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "hutch serving" {
				addr <- rec.Addr
			}
		}
		s.exited <- cmd.Wait()
	}()
	select {
	case a := <-addr:
		key, err := os.ReadFile(filepath.Join(data, "admin.key"))
		if err != nil {
			cmd.Process.Kill()
			return nil, err
		}
		s.c = client.New("http://"+a, strings.TrimSpace(string(key)))
		return s, nil
	case err := <-s.exited:
		return nil, fmt.Errorf("hutch serve exited: %v", err)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return nil, errors.New("hutch serve did not start")
	}
}

// stop sends SIGTERM and times the exit.
func (s *server) stop() (time.Duration, error) {
	t := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	select {
	case err := <-s.exited:
		return time.Since(t), err
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		return 0, errors.New("hutch serve did not exit within 60 s of SIGTERM")
	}
}

// round starts a server, opens streams of each kind on its sandbox and
// times its SIGTERM.
func round(hutch, data string, streams int) (time.Duration, error) {
	s, err := start(hutch, data)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id, err := sandboxOf(ctx, s.c)
	if err != nil {
		s.stop()
		return 0, err
	}
	if err := openStreams(ctx, s.c, id, streams); err != nil {
		s.stop()
		return 0, err
	}
	return s.stop()
}

// sandboxOf returns the running sandbox an earlier round made, or a new
// one.
func sandboxOf(ctx context.Context, c *client.Client) (string, error) {
	for sb, err := range c.AllSandboxes(ctx, client.ListOptions{}) {
		if err != nil {
			return "", err
		}
		switch sb.State {
		case api.StateRunning:
			return sb.ID, nil
		case api.StateStopped:
			if _, err := c.StartSandbox(ctx, sb.ID); err != nil {
				return "", err
			}
			return sb.ID, nil
		}
	}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		return "", err
	}
	return sb.ID, nil
}

// openStreams opens n streams of each kind and reads each once it is open,
// on goroutines that end with ctx or the server.
func openStreams(ctx context.Context, c *client.Client, id string, n int) error {
	if n == 0 {
		return nil
	}
	p, err := c.StartProcess(ctx, id, api.ProcessRequest{Cmd: []string{"sleep", "3600"}})
	if err != nil {
		return err
	}
	for range n {
		ex, err := c.ExecStream(ctx, id, api.ExecRequest{Cmd: []string{"sleep", "3600"}})
		if err != nil {
			return fmt.Errorf("exec stream: %w", err)
		}
		go ex.Copy(nil, nil)
		out, err := c.ProcessOutput(ctx, id, p.PID, 0, true)
		if err != nil {
			return fmt.Errorf("process output: %w", err)
		}
		go drain(func() error { _, err := out.Next(); return err })
		w, err := c.WatchFiles(ctx, id, ".", true)
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		go drain(func() error { _, err := w.Next(); return err })
		ev, err := c.StreamEvents(ctx, client.EventQuery{})
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
		go drain(func() error { _, err := ev.Next(); return err })
		term, err := c.AttachTerminal(ctx, id, p.PID, 0)
		if err != nil {
			return fmt.Errorf("terminal: %w", err)
		}
		go drain(func() error { _, err := term.Next(ctx); return err })
	}
	return nil
}

func drain(next func() error) {
	for next() == nil {
	}
}
