// Package envelope is the bootstrap message a driver hands hutch-agent when
// it starts it: a 4-byte big-endian length followed by that many bytes of
// JSON, on the agent's stdin. Decode is fuzzed: the agent reads it before it
// trusts anything.
package envelope

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"strconv"
	"strings"

	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/agent/nsinit"
)

// Version is the envelope format this build writes; it reads MinVersion
// up to Version. The version is also the protocol of the control plane
// that wrote it (agentproto.Protocol): 1 from a control plane that signs
// requests the protocol 1 way. A control plane writes the highest version
// the agent binary it starts reports (hutch-agent -protocol), so an old
// agent, which reads only version 1, still starts.
const (
	Version    = 2
	MinVersion = 1
)

// MaxSize bounds an envelope; a larger length prefix is refused before any
// allocation.
const MaxSize = 1 << 20

// Envelope is everything the agent needs to serve one sandbox.
type Envelope struct {
	Version   int    `json:"version"`
	SandboxID string `json:"sandbox_id"`
	// Token authenticates the control plane to the agent and the agent to
	// the control plane (HMAC proofs; it never crosses the socket).
	Token string `json:"token"`
	// Socket is the path of the Unix socket the agent listens on, in the
	// agent's own view of the filesystem (see Namespace).
	Socket string `json:"socket,omitempty"`
	// Listen, instead of Socket, is a TCP address ("host:port", host
	// often empty) the agent listens on: the kubernetes driver's, whose
	// control plane dials the Pod's IP. Every request is still signed
	// with Token and every answer carries the agent's proof.
	Listen string `json:"listen,omitempty"`
	// OwnNetwork says the sandbox's network namespace is its own even
	// though it has interfaces beyond loopback (a Pod's): its loopback
	// reaches only the sandbox, so its ports may be previewed.
	OwnNetwork bool `json:"own_network,omitempty"`
	// EgressStreams, with Listen, has the agent forward the sandbox's
	// egress (agentproto.EgressAddr) over requests its control plane
	// keeps open on it (GET /egress) rather than dial out: a Pod needs
	// no route to its control plane.
	EgressStreams bool `json:"egress_streams,omitempty"`
	// LayerSnapshots has the agent, pid 1 of its own pid namespace, record
	// what its root holds before it serves and answer GET /snapshot with
	// what changed since, as an image layer (files.RecordBaseline): the
	// kubernetes driver's snapshots.
	LayerSnapshots bool `json:"layer_snapshots,omitempty"`
	// AwaitBootstrap, with Listen, makes a warm agent: it serves only
	// POST /bootstrap, signed with Token, whose body is the sandbox's own
	// envelope sealed for Token (Seal); it then serves that sandbox as if
	// started with it. The kubernetes driver's warm pool.
	AwaitBootstrap bool `json:"await_bootstrap,omitempty"`
	// Root is the top of what the file API may reach, in the agent's view;
	// Workdir is the default directory of commands and of relative paths.
	Root    string            `json:"root"`
	Workdir string            `json:"workdir"`
	Env     map[string]string `json:"env,omitempty"`
	// MaxFileBytes bounds one file read or written through the file API.
	MaxFileBytes int64 `json:"max_file_bytes"`
	// MaxTarBytes bounds what one tar upload unpacks (its files' sizes,
	// sparse holes included) and MaxTarEntries what it makes (files,
	// symlinks, directories); zero means the agent's defaults.
	MaxTarBytes   int64 `json:"max_tar_bytes,omitempty"`
	MaxTarEntries int   `json:"max_tar_entries,omitempty"`
	// ProcessOutputBytes bounds each background process's output buffer;
	// zero means the agent's default.
	ProcessOutputBytes int64 `json:"process_output_bytes,omitempty"`
	// Confine is applied by the agent to itself after it listens.
	Confine *confine.Config `json:"confine,omitempty"`
	// CommandRlimits are set on each command the agent starts, and not on
	// the agent (a Go runtime maps far more address space than it uses,
	// so a data limit sized for a sandbox's commands would starve it):
	// before it runs, through the Prlimit program, or else right after it
	// starts, which a command that forks at once can outrun.
	CommandRlimits []confine.Rlimit `json:"command_rlimits,omitempty"`
	// Prlimit is util-linux's prlimit(1), which the agent starts each
	// command through when CommandRlimits are set; "" falls back to
	// setting them after the start.
	Prlimit string `json:"prlimit,omitempty"`
	// CommandCaps, when set, narrows the capability bounding set of the
	// thread the agent forks every command from, so no command can gain
	// what it drops.
	CommandCaps *confine.Caps `json:"command_caps,omitempty"`
	// RunAs, when set, is the user every command runs as; the agent also
	// creates files through the file API as that user.
	RunAs *RunAs `json:"run_as,omitempty"`
	// ExecFD, when above 2, is a descriptor of the agent's own binary the
	// driver executed it through (/proc/self/fd/<n>, so no lookup of the
	// directories above the binary ran as the sandbox's user); the agent
	// closes it first thing, so no command inherits it.
	ExecFD int `json:"exec_fd,omitempty"`
	// Namespace, when set, makes the agent build the sandbox's root and
	// enter it before it serves (the namespace driver); Socket is then
	// relative to the sandbox's host directory (nsinit.Config.DirFD),
	// listened on before the root pivots, and Root and Workdir are paths
	// inside the new root.
	Namespace *nsinit.Config `json:"namespace,omitempty"`
}

// RunAs is a user and group, as the sandbox numbers them.
type RunAs struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// AppGID is the group of the app's processes (the agent's supervisor)
// where the sandbox's commands run as an unprivileged user (a RunAs whose
// UID is not 0): they run as that user, with this group instead of its
// own. The kernel lets a process read another's environment and memory
// (/proc/<pid>/environ, mem) only when all of its groups match too, or
// with CAP_SYS_PTRACE, so no command, which has the user's group and
// cannot change it, reads the config the app's processes were started
// with. A driver that sets such a RunAs maps this group in the sandbox;
// the namespace driver maps 0-65535 and names it hutch-app in its own
// /etc/group.
const AppGID = 65533

// Validate checks what the agent relies on.
func (e *Envelope) Validate() error {
	switch {
	case e.Version < MinVersion || e.Version > Version:
		return fmt.Errorf("envelope version %d, want %d to %d", e.Version, MinVersion, Version)
	case e.SandboxID == "":
		return errors.New("envelope has no sandbox id")
	case len(e.Token) < 32:
		return errors.New("envelope token is shorter than 32 characters")
	case e.Listen != "" && (e.Socket != "" || e.Namespace != nil):
		return errors.New("envelope listen excludes socket and namespace")
	case e.EgressStreams && e.Listen == "":
		return errors.New("envelope egress_streams needs listen")
	case e.LayerSnapshots && e.Listen == "":
		return errors.New("envelope layer_snapshots needs listen")
	case e.AwaitBootstrap && e.Listen == "":
		return errors.New("envelope await_bootstrap needs listen")
	case e.Listen != "" && !validTCPAddr(e.Listen):
		return errors.New("envelope listen is not a host:port with a port from 1 to 65535")
	case e.Listen == "" && e.Namespace == nil && !path.IsAbs(e.Socket):
		return errors.New("envelope socket path is not absolute")
	case e.Namespace != nil && (path.IsAbs(e.Socket) || path.Clean(e.Socket) != e.Socket || strings.HasPrefix(e.Socket, "..")):
		return errors.New("envelope socket path must be relative to the sandbox's directory, and inside it")
	case !path.IsAbs(e.Root) || path.Clean(e.Root) != e.Root:
		return errors.New("envelope root is not a clean absolute path")
	case !within(e.Root, e.Workdir):
		return errors.New("envelope workdir is not inside root")
	case e.MaxFileBytes <= 0:
		return errors.New("envelope max_file_bytes must be positive")
	case e.ProcessOutputBytes < 0:
		return errors.New("envelope process_output_bytes must not be negative")
	case e.MaxTarBytes < 0 || e.MaxTarEntries < 0:
		return errors.New("envelope max_tar_bytes and max_tar_entries must not be negative")
	case e.ExecFD < 0 || (e.ExecFD > 0 && e.ExecFD < 3):
		return errors.New("envelope exec_fd must be above 2")
	}
	if err := confine.ValidateRlimits(e.CommandRlimits); err != nil {
		return fmt.Errorf("envelope command_rlimits: %w", err)
	}
	if e.Prlimit != "" && !path.IsAbs(e.Prlimit) {
		return errors.New("envelope prlimit is not an absolute path")
	}
	if e.CommandCaps != nil {
		if err := e.CommandCaps.Validate(); err != nil {
			return fmt.Errorf("envelope command_caps: %w", err)
		}
	}
	if e.Namespace != nil {
		if err := e.Namespace.Validate(); err != nil {
			return fmt.Errorf("envelope namespace: %w", err)
		}
	}
	for k := range e.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("envelope env name %q is invalid", k)
		}
	}
	for _, v := range e.Env {
		if strings.ContainsRune(v, 0) {
			return errors.New("envelope env value holds a NUL byte")
		}
	}
	return nil
}

func validTCPAddr(a string) bool {
	_, port, err := net.SplitHostPort(a)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n < 65536
}

func within(root, p string) bool {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return false
	}
	return root == "/" || p == root || strings.HasPrefix(p, root+"/")
}

// Encode writes e as one length-prefixed frame.
func Encode(w io.Writer, e *Envelope) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if len(b) > MaxSize {
		return fmt.Errorf("envelope is %d bytes, more than %d", len(b), MaxSize)
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := w.Write(append(hdr[:], b...)); err != nil {
		return fmt.Errorf("write envelope: %w", err)
	}
	return nil
}

// Decode reads one frame from r, decodes it strictly and validates it.
func Decode(r io.Reader) (*Envelope, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("read envelope length: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > MaxSize {
		return nil, fmt.Errorf("envelope length %d is outside 1..%d", n, MaxSize)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("read envelope body: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var e Envelope
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("decode envelope: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("envelope has trailing data")
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return &e, nil
}
