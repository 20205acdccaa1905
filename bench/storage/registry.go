package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/hutchdev/hutch/internal/base/osthread"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// registry is Debian's docker-registry, serving plain HTTP on loopback
// from a temporary directory, started by this process and dying with it.
type registry struct {
	host string // 127.0.0.1:<port>
	dir  string // its storage and configuration, and skopeo's HOME
	cmd  *exec.Cmd
	done <-chan struct{}
}

// registryConfig is the registry's configuration: storage directory and
// address.
const registryConfig = `version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
`

// startRegistry starts docker-registry on a free loopback port and waits
// until it answers /v2/. The caller calls stop.
func startRegistry() (_ *registry, retErr error) {
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		return nil, fmt.Errorf("docker-registry: %w (Debian package docker-registry)", err)
	}
	dir, err := os.MkdirTemp("", "hutch-bench-registry-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := os.Mkdir(filepath.Join(dir, "home"), 0o700); err != nil {
		return nil, err
	}
	// A port picked free may be taken before the registry binds it: try
	// another.
	for attempt := 1; ; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		addr := l.Addr().String()
		l.Close()
		cfg := filepath.Join(dir, "config.yml")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, registryConfig, filepath.Join(dir, "storage"), addr), 0o600); err != nil {
			return nil, err
		}
		var out bytes.Buffer
		cmd := exec.Command(bin, "serve", cfg)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir} // no REGISTRY_* overrides
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		done, err := osthread.StartTied(cmd)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", bin, err)
		}
		r := &registry{host: addr, dir: dir, cmd: cmd, done: done}
		err = waitRegistry(addr, done)
		if err == nil {
			return r, nil
		}
		r.kill()
		if attempt < 3 && strings.Contains(out.String(), "address already in use") {
			continue
		}
		return nil, fmt.Errorf("docker-registry on %s: %w\n%s", addr, err, out.String())
	}
}

// kill ends the registry and waits for it.
func (r *registry) kill() {
	r.cmd.Process.Kill()
	<-r.done
}

// stop ends the registry and removes its directory.
func (r *registry) stop() {
	r.kill()
	os.RemoveAll(r.dir)
}

// waitRegistry waits up to 15 seconds for host to answer /v2/, or for the
// registry to exit.
func waitRegistry(host string, exited <-chan struct{}) error {
	client := &http.Client{Transport: &http.Transport{}, Timeout: time.Second} // no proxy
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get("http://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/v2/ answered %s", resp.Status)
		}
		select {
		case <-exited:
			return errors.New("the registry exited")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer in 15s: %w", err)
		}
	}
}

// push copies the OCI layout's one image to the registry as repoTag with
// skopeo and returns its reference there.
func (r *registry) push(ctx context.Context, layout, repoTag string) (string, error) {
	ref := r.host + "/" + repoTag
	_, err := r.skopeo(ctx, "copy", "--quiet", "--dest-tls-verify=false", "oci:"+layout, "docker://"+ref)
	return ref, err
}

// skopeo runs skopeo with args, its configuration and caches in the
// registry's directory, and returns how long it took.
func (r *registry) skopeo(ctx context.Context, args ...string) (time.Duration, error) {
	return runTool(ctx, skopeoEnv(r.dir), "skopeo", append([]string{"--insecure-policy"}, args...)...)
}

// skopeoEnv keeps skopeo's auth files and caches under dir.
func skopeoEnv(dir string) []string {
	home := filepath.Join(dir, "home")
	return []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_RUNTIME_DIR=" + home, "XDG_CONFIG_HOME=" + home, "TMPDIR=" + home}
}

// runTool runs name with args and env (nil: this process's), returning how
// long it ran; a failure carries its output.
func runTool(ctx context.Context, env []string, name string, args ...string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return d, nil
}
