package e2b

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"strconv"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	pb "github.com/hutchdev/hutch/internal/edge/e2b/envdpb/filesystem"
)

// filesystemService is envd's filesystem.Filesystem on hutch's files API.
type filesystemService struct{ h *Handler }

// call is the call of a filesystem request, its user checked by filesAs.
func (s filesystemService) call(ctx context.Context) (call, error) {
	c, err := s.h.rpcCall(ctx)
	if err != nil {
		return c, err
	}
	if err := s.h.filesAs(ctx, c); err != nil {
		return c, s.h.rpcError(err)
	}
	return c, nil
}

// maxListDepth bounds ListDir's depth: every level is a call per directory.
const maxListDepth = 16

func (s filesystemService) Stat(ctx context.Context, req *connect.Request[pb.StatRequest]) (*connect.Response[pb.StatResponse], error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	fi, err := s.h.cfg.Sandboxes.StatFile(ctx, c.sandbox, req.Msg.GetPath())
	if err != nil {
		return nil, s.h.rpcError(err)
	}
	return connect.NewResponse(&pb.StatResponse{Entry: entryOf(fi)}), nil
}

// MakeDir makes a directory and those above it; one that exists is
// AlreadyExists, which the SDK reads as "false".
func (s filesystemService) MakeDir(ctx context.Context, req *connect.Request[pb.MakeDirRequest]) (*connect.Response[pb.MakeDirResponse], error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Msg.GetPath()
	if fi, err := s.h.cfg.Sandboxes.StatFile(ctx, c.sandbox, p); err == nil {
		code := connect.CodeAlreadyExists
		if fi.Type != api.FileDir {
			code = connect.CodeInvalidArgument
		}
		return nil, connect.NewError(code, errors.New(p+" already exists"))
	} else if !errors.Is(err, errdefs.ErrNotFound) {
		return nil, s.h.rpcError(err)
	}
	fi, err := s.h.cfg.Sandboxes.Mkdir(ctx, c.sandbox, api.MkdirRequest{Path: p})
	if err != nil {
		return nil, s.h.rpcError(err)
	}
	return connect.NewResponse(&pb.MakeDirResponse{Entry: entryOf(fi)}), nil
}

func (s filesystemService) Move(ctx context.Context, req *connect.Request[pb.MoveRequest]) (*connect.Response[pb.MoveResponse], error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	fi, err := s.h.cfg.Sandboxes.Move(ctx, c.sandbox, api.MoveRequest{From: req.Msg.GetSource(), To: req.Msg.GetDestination(), Overwrite: true})
	if err != nil {
		return nil, s.h.rpcError(err)
	}
	return connect.NewResponse(&pb.MoveResponse{Entry: entryOf(fi)}), nil
}

func (s filesystemService) Remove(ctx context.Context, req *connect.Request[pb.RemoveRequest]) (*connect.Response[pb.RemoveResponse], error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.h.cfg.Sandboxes.RemoveFile(ctx, c.sandbox, req.Msg.GetPath(), true); err != nil {
		return nil, s.h.rpcError(err)
	}
	return connect.NewResponse(&pb.RemoveResponse{}), nil
}

// ListDir lists a directory to the depth asked (1: its entries), the
// entries of each level before the next.
func (s filesystemService) ListDir(ctx context.Context, req *connect.Request[pb.ListDirRequest]) (*connect.Response[pb.ListDirResponse], error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	depth := int(req.Msg.GetDepth())
	if depth == 0 {
		depth = 1
	}
	if depth > maxListDepth {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("depth is at most "+strconv.Itoa(maxListDepth)))
	}
	out := &pb.ListDirResponse{}
	dirs := []string{req.Msg.GetPath()}
	for level := 0; level < depth && len(dirs) > 0; level++ {
		var next []string
		for _, d := range dirs {
			list, err := s.h.cfg.Sandboxes.ListFiles(ctx, c.sandbox, d)
			if err != nil {
				return nil, s.h.rpcError(err)
			}
			for _, fi := range list.Entries {
				out.Entries = append(out.Entries, entryOf(fi))
				if fi.Type == api.FileDir {
					next = append(next, fi.Path)
				}
			}
		}
		dirs = next
	}
	return connect.NewResponse(out), nil
}

// WatchDir streams the changes under a directory: a start event, then
// one event per change, with keepalives while it is quiet.
func (s filesystemService) WatchDir(ctx context.Context, req *connect.Request[pb.WatchDirRequest], stream *connect.ServerStream[pb.WatchDirResponse]) error {
	c, err := s.call(ctx)
	if err != nil {
		return err
	}
	if req.Msg.GetIncludeEntry() {
		return connect.NewError(connect.CodeUnimplemented, errors.New("includeEntry is not translated yet"))
	}
	w, err := s.h.cfg.Sandboxes.Watch(ctx, c.sandbox, req.Msg.GetPath(), req.Msg.GetRecursive())
	if err != nil {
		return s.h.rpcError(err)
	}
	pm := sandbox.StartPump(ctx, w, 0)
	if err := stream.Send(&pb.WatchDirResponse{Event: &pb.WatchDirResponse_Start{Start: &pb.WatchDirResponse_StartEvent{}}}); err != nil {
		pm.Stop()
		return err
	}
	return relay[api.WatchEvent]{
		every: keepaliveEvery(req.Header()),
		send: func(ev api.WatchEvent) error {
			for _, fe := range watchEvents(ev) {
				if err := stream.Send(&pb.WatchDirResponse{Event: &pb.WatchDirResponse_Filesystem{Filesystem: fe}}); err != nil {
					return err
				}
			}
			return nil
		},
		keepalive: func() error {
			return stream.Send(&pb.WatchDirResponse{Event: &pb.WatchDirResponse_Keepalive{Keepalive: &pb.WatchDirResponse_KeepAlive{}}})
		},
		failed: s.h.rpcError,
		ended:  ctx.Err,
	}.run(ctx, pm)
}

// watchEvents translates one change: E2B names the path relative to the
// watched directory, as hutch does; a rename is the old name's rename
// and the new name's create, as envd reports it (from inotify).
func watchEvents(ev api.WatchEvent) []*pb.FilesystemEvent {
	one := func(name string, t pb.EventType) *pb.FilesystemEvent {
		return &pb.FilesystemEvent{Name: name, Type: t}
	}
	switch ev.Type {
	case api.WatchCreate:
		return []*pb.FilesystemEvent{one(ev.Path, pb.EventType_EVENT_TYPE_CREATE)}
	case api.WatchWrite:
		return []*pb.FilesystemEvent{one(ev.Path, pb.EventType_EVENT_TYPE_WRITE)}
	case api.WatchRemove:
		return []*pb.FilesystemEvent{one(ev.Path, pb.EventType_EVENT_TYPE_REMOVE)}
	case api.WatchRename:
		return []*pb.FilesystemEvent{one(ev.OldPath, pb.EventType_EVENT_TYPE_RENAME), one(ev.Path, pb.EventType_EVENT_TYPE_CREATE)}
	}
	return nil // overflow: envd has no event for lost events
}

// entryOf is envd's EntryInfo of a hutch file. hutch's files API names no
// owner or group, so those are empty.
func entryOf(fi api.FileInfo) *pb.EntryInfo {
	mode, _ := strconv.ParseUint(fi.Mode, 8, 32)
	perm := fs.FileMode(mode) & fs.ModePerm
	e := &pb.EntryInfo{
		Name:         fi.Name,
		Path:         fi.Path,
		Size:         fi.Size,
		Mode:         uint32(mode),
		ModifiedTime: timestamppb.New(fi.ModTime),
		Metadata:     map[string]string{},
	}
	if e.Name == "" {
		e.Name = path.Base(fi.Path)
	}
	switch fi.Type {
	case api.FileDir:
		e.Type, perm = pb.FileType_FILE_TYPE_DIRECTORY, perm|fs.ModeDir
	case api.FileSymlink:
		e.Type, perm = pb.FileType_FILE_TYPE_SYMLINK, perm|fs.ModeSymlink
		e.SymlinkTarget = &fi.LinkTarget
	case api.FileRegular:
		e.Type = pb.FileType_FILE_TYPE_FILE
	}
	e.Permissions = perm.String()
	return e
}
