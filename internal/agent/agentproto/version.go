package agentproto

import "slices"

// Protocol is the version of the control plane ↔ agent protocol this build
// speaks. Protocol 1 (before versioning) was HTTP/1.1 with NDJSON streams
// and a MAC over method and path; an agent that reports no protocol speaks
// it. Protocol 2 adds HTTP/2 over the same socket, framed output, a MAC
// over the query and the body, and the features below. An agent of
// protocol 2 still serves a control plane of protocol 1 (the envelope's
// version says which one started it), and the control plane still drives
// an agent of protocol 1, without the features it lacks.
const Protocol = 2

// Features an agent reports beside its protocol. The control plane gates
// each call that needs one on the agent's list (e2b's
// MinEnvdVersionFor… checks are the model), so an old agent in an old
// template gets a clear error, or the older way, never a silent
// misunderstanding.
const (
	// FeatureH2: the agent serves HTTP/2 with prior knowledge on its
	// socket, so one connection carries every call.
	FeatureH2 = "h2"
	// FeatureFrames: exec and output streams come as binary frames (see
	// frames.go) when the request accepts MediaFrames.
	FeatureFrames = "frames"
	// FeatureEvents: GET /events pushes process exits, so no request
	// waits on one process.
	FeatureEvents = "events"
	// FeatureStdinStream: POST /processes/{pid}/stdin?stream=true carries
	// a process's input for as long as the request lasts.
	FeatureStdinStream = "stdin.stream"
	// FeatureLoopbackV6: tunnels reach servers bound to ::1 as well as
	// 127.0.0.1.
	FeatureLoopbackV6 = "tunnel.ipv6"
	// FeaturePorts: GET /ports lists the sockets listening in the sandbox.
	FeaturePorts = "ports"
	// FeatureTunnelFD: GET /tunnel/{port}?pass=fd hands the control
	// plane the connected socket itself (SCM_RIGHTS) instead of copying
	// its bytes.
	FeatureTunnelFD = "tunnel.fd"
	// FeatureApp: the agent supervises an app's processes from its
	// manifest (PUT /app and the rest of app.go).
	FeatureApp = "app"
	// FeatureHistory: the agent checkpoints and restores directories
	// (/history/…, see history.go).
	FeatureHistory = "history"
	// FeatureRoot: a command or background process may ask to run as
	// root (root in ExecRequest and ProcessRequest) rather than as the
	// sandbox's user.
	FeatureRoot = "exec.root"
	// FeatureDirFD: under the namespace driver the agent takes its
	// sandbox's directory as a descriptor the host opened
	// (nsinit.Config.DirFD) and closes it before any command starts; an
	// agent without it would pass the descriptor on to every command.
	FeatureDirFD = "ns.dirfd"
	// FeatureSpawn: under the namespace driver the agent binary, run as
	// `<name> -spawn <spec>` in the host's namespaces, starts the agent
	// in the sandbox's (nsinit.Spawn), so the control plane never forks
	// itself into a new user namespace, a full copy of its memory.
	FeatureSpawn = "ns.spawn"
	// FeatureEgressFD: under the namespace driver the agent's egress
	// forwarder hands each connection to the control plane whole when
	// asked (nsinit.Config.EgressPass, agentproto.EgressPassed); an agent
	// without it refuses an envelope that asks.
	FeatureEgressFD = "egress.fd"
	// FeatureEgressStreams: an agent listening on TCP forwards the
	// sandbox's egress over GET /egress requests its control plane keeps
	// open (envelope egress_streams); an agent without it refuses an
	// envelope that asks.
	FeatureEgressStreams = "egress.streams"
	// FeatureLayerSnapshots: an agent asked (envelope layer_snapshots)
	// answers GET /snapshot with what changed in its root since it
	// started, as an OCI layer, its sandbox's processes stopped meanwhile.
	FeatureLayerSnapshots = "snapshot.layer"
)

// Features is what this build's agent reports.
var Features = []string{FeatureH2, FeatureFrames, FeatureEvents, FeatureStdinStream, FeatureLoopbackV6, FeaturePorts, FeatureTunnelFD, FeatureApp, FeatureHistory, FeatureRoot, FeatureDirFD, FeatureSpawn, FeatureEgressFD, FeatureEgressStreams, FeatureLayerSnapshots}

// Info is an agent's protocol and features, as its ready line and health
// report them and the control plane records them per sandbox.
type Info struct {
	Protocol int      `json:"protocol,omitempty"`
	Features []string `json:"features,omitempty"`
}

// Current is what this build's agent reports.
func Current() Info {
	return Info{Protocol: Protocol, Features: slices.Clone(Features)}
}

// Version is the protocol, 1 when none was reported.
func (i Info) Version() int {
	return max(i.Protocol, 1)
}

// Has reports whether the agent reported feature f.
func (i Info) Has(f string) bool {
	return i.Version() >= 2 && slices.Contains(i.Features, f)
}
