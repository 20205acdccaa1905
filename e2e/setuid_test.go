package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
)

// TestPlantedSetuid: a sandbox's root plants a setuid copy of a program in
// its files. No host user may run it (it would run as the sandbox's host
// uid, outside its namespaces and cgroups), even when the operator has
// opened the directories above the data directory; and a process of the
// sandbox's host uids that runs outside it anyway does not outlive the
// sandbox's destroy, before its uid range goes to another sandbox.
func TestPlantedSetuid(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace")
	ctx := context.Background()
	c := s.client()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Root: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "cp /usr/bin/sleep /workspace/sus && chmod 4755 /workspace/sus && ls -ln /workspace/sus"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("planting: %+v, %v", res, err)
	}
	dir := filepath.Join(s.dataDir, "sandboxes", "namespace", sb.ID)
	var planted string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Name() == "sus" && fi.Mode()&os.ModeSetuid != 0 {
			planted = p
		}
		return nil
	})
	if planted == "" {
		t.Fatal("the planted file is not under the sandbox's directory")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(planted, &st); err != nil {
		t.Fatal(err)
	}
	const nobody = 65534
	run := exec.Command(planted, "600")
	run.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	if err := run.Start(); err == nil {
		run.Process.Kill()
		run.Wait()
		t.Errorf("a host user ran the sandbox's setuid file %s (owner uid %d)", planted, st.Uid)
	}

	// The file keeps the sandbox's own ids on disk (its layer is id-mapped
	// in): the sandbox's root's, setuid. Only hutch's user may reach it:
	// every directory above it up to the sandbox's own upper/ is closed.
	if st.Uid != 0 {
		t.Errorf("the planted file is owned by %d on disk; want 0, the sandbox's root's own id", st.Uid)
	}
	upper, err := os.Stat(filepath.Join(dir, "upper"))
	if err != nil || upper.Mode().Perm() != 0o700 {
		t.Errorf("the writable layer's directory: %v, %v; want 0700", upper, err)
	}
	// A process of the sandbox's host uid outside it (however it got
	// there): the uid its root has on the host.
	var state struct {
		IDBase uint32 `json:"id_base"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err == nil {
		err = json.Unmarshal(b, &state)
	}
	if err != nil || state.IDBase == 0 {
		t.Fatalf("the sandbox's host ids: %+v, %v", state, err)
	}
	hostUID := state.IDBase + st.Uid
	stray := exec.Command("/usr/bin/sleep", "600")
	stray.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: hostUID, Gid: hostUID, Groups: []uint32{}}, Setsid: true}
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { stray.Wait(); close(exited) }()
	defer stray.Process.Kill()
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatalf("a process of the sandbox's host uid %d outlived its destroy", hostUID)
	}
}
