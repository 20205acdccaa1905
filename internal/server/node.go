package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hutchdev/hutch/internal/base/ids"
)

// openNode names this control plane (nodeName).
func (s *Server) openNode(_ context.Context, p *parts) (err error) {
	p.node, err = nodeName(s.cfg.Node, s.cfg.DataDir)
	return err
}

// nodeName is this control plane's name in the sandboxes it owns: the
// configured one, else the one kept in <data>/node, made on first start
// from the host name and a random suffix (so two servers on one host with
// their own data directories are two nodes).
func nodeName(configured, dataDir string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	p := filepath.Join(dataDir, "node")
	b, err := os.ReadFile(p)
	if err == nil {
		if n := strings.TrimSpace(string(b)); n != "" {
			return n, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("node name: %w", err)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "hutch"
	}
	name := host + "-" + ids.New()[20:]
	if err := os.WriteFile(p, []byte(name+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("node name: %w", err)
	}
	return name, nil
}
