package sandbox

import (
	"context"
	"io"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/control/quota"
)

// The file API of a running sandbox, through the door. Paths are the
// sandbox's, relative to its working directory unless absolute; the agent
// confines them to the sandbox's root.

// ReadFile streams a file's content; Close ends the call.
func (s *Service) ReadFile(ctx context.Context, id, path string) (io.ReadCloser, error) {
	return s.readBody(ctx, id, "files.read", func(a *agentclient.Client) (io.ReadCloser, error) { return a.ReadFile(ctx, path) })
}

// WriteFile writes body to path atomically, with mode ("" keeps the
// default) and, with parents, the missing directories above it.
func (s *Service) WriteFile(ctx context.Context, id, path, mode string, parents bool, body io.Reader) (api.FileInfo, error) {
	if err := s.cfg.Disk.Check("a file write"); err != nil {
		return api.FileInfo{}, err
	}
	return unary(ctx, s, id, "files.write", func(ctx context.Context, a *agentclient.Client) (api.FileInfo, error) {
		return a.WriteFile(ctx, path, mode, parents, body)
	})
}

// RemoveFile removes path (a directory only with recursive).
func (s *Service) RemoveFile(ctx context.Context, id, path string, recursive bool) error {
	_, err := unary(ctx, s, id, "files.remove", func(ctx context.Context, a *agentclient.Client) (struct{}, error) {
		return struct{}{}, a.Remove(ctx, path, recursive)
	})
	return err
}

// ListFiles lists a directory.
func (s *Service) ListFiles(ctx context.Context, id, path string) (api.FileList, error) {
	return unary(ctx, s, id, "files.list", func(ctx context.Context, a *agentclient.Client) (api.FileList, error) {
		return a.List(ctx, path)
	})
}

// StatFile describes path.
func (s *Service) StatFile(ctx context.Context, id, path string) (api.FileInfo, error) {
	return unary(ctx, s, id, "files.stat", func(ctx context.Context, a *agentclient.Client) (api.FileInfo, error) {
		return a.Stat(ctx, path)
	})
}

// Mkdir makes a directory.
func (s *Service) Mkdir(ctx context.Context, id string, req api.MkdirRequest) (api.FileInfo, error) {
	return unary(ctx, s, id, "files.mkdir", func(ctx context.Context, a *agentclient.Client) (api.FileInfo, error) {
		return a.Mkdir(ctx, req)
	})
}

// Move renames a file or directory.
func (s *Service) Move(ctx context.Context, id string, req api.MoveRequest) (api.FileInfo, error) {
	return unary(ctx, s, id, "files.move", func(ctx context.Context, a *agentclient.Client) (api.FileInfo, error) {
		return a.Move(ctx, req)
	})
}

// TarDownload streams path as a tar archive; Close ends the call.
func (s *Service) TarDownload(ctx context.Context, id, path string) (io.ReadCloser, error) {
	return s.readBody(ctx, id, "files.tar_download", func(a *agentclient.Client) (io.ReadCloser, error) { return a.TarDownload(ctx, path) })
}

// TarUpload unpacks a tar archive under path.
func (s *Service) TarUpload(ctx context.Context, id, path string, body io.Reader) (api.TarResult, error) {
	if err := s.cfg.Disk.Check("a tar upload"); err != nil {
		return api.TarResult{}, err
	}
	return unary(ctx, s, id, "files.tar_upload", func(ctx context.Context, a *agentclient.Client) (api.TarResult, error) {
		return a.TarUpload(ctx, path, body)
	})
}

// Watch follows changes under path (recursive: in every subdirectory,
// new ones included). The stream ends with io.EOF when path goes away.
func (s *Service) Watch(ctx context.Context, id, path string, recursive bool) (Stream[api.WatchEvent], error) {
	c, err := s.openHeld(ctx, id, "files.watch", quota.Watch)
	if err != nil {
		return nil, err
	}
	w, err := c.agent.Watch(ctx, path, recursive)
	if err != nil {
		return nil, c.end(err)
	}
	return &stream[api.WatchEvent]{c: c, next: w.Next, close: w.Close}, nil
}
