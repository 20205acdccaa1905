// Command storage measures what hutch's storage costs, in one run, and
// prints Markdown tables:
//
//   - fork: forks of a sandbox holding 10 MiB and one holding 1 GiB, on a
//     btrfs, an xfs (reflink) and an ext4 (overlay) filesystem the program
//     makes on a loop device: the fork call, the sandbox's pause, and the
//     server's own timing of the copy, beside a create that copies nothing;
//   - snapshot: snapshots of the same sandboxes, and creates from them;
//   - template: creates from a pulled Debian image against creates from the
//     host template;
//   - pull: pulling and unpacking that image from a registry on loopback,
//     against skopeo copy followed by umoci unpack.
//
// It starts its own hutch servers in process (loopback, namespace driver,
// a temporary data directory: on each loop filesystem for fork and
// snapshot, in the system's temporary directory otherwise) and its own
// docker-registry on loopback, and removes all it made, on ^C too. It needs
// root, loop devices, mkfs.btrfs, mkfs.xfs, mkfs.ext4, docker-registry,
// skopeo and umoci (bash bench/setup.sh), and the Debian image that
// `go test -run TestDebianAptGet ./e2e/` caches.
//
//	CGO_ENABLED=0 go build -o bin/ ./cmd/... ./bench/... && bin/storage -agent bin/hutch-agent
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// sections are the parts -only picks from, in the order they run.
var sections = []string{"fork", "snapshot", "template", "pull"}

// options are the command's flags.
type options struct {
	agent       string
	n, pulls    int
	filesystems []string
	only        map[string]bool
	fsGiB       int64
	sparse      bool  // leave the loop filesystems' image sparse
	warm        int   // the warm pool of the fork and snapshot servers
	memoryMB    int   // the memory limit of the sandboxes forked; 0: the server's default
	tmplPools   []int // the warm pools the template comparison runs with
	layout      string
	verbose     bool
}

func main() {
	var o options
	var fsList, only, pools string
	flag.StringVar(&o.agent, "agent", "", "path of hutch-agent (default: beside this binary)")
	flag.IntVar(&o.n, "n", 20, "forks, snapshots and creates of each kind to time")
	flag.IntVar(&o.pulls, "pulls", 5, "rounds of pulling the Debian image, each way")
	flag.StringVar(&fsList, "fs", "btrfs,xfs,ext4", "filesystems to fork and snapshot on, comma separated")
	flag.StringVar(&only, "only", strings.Join(sections, ","), "sections to run, comma separated: "+strings.Join(sections, ", "))
	flag.Int64Var(&o.fsGiB, "fs-gib", 8, "size of the loop filesystems' image, GiB")
	flag.BoolVar(&o.sparse, "sparse", false, "leave the loop filesystems' image sparse instead of writing it full of zeros first (the host then allocates blocks during the copies)")
	flag.IntVar(&o.warm, "warm-pool", 2, "warm pool of the servers that fork and snapshot")
	flag.IntVar(&o.memoryMB, "memory-mb", 0, "memory limit of the sandboxes forked and snapshotted, MiB (0: the server's default); their page cache counts against it")
	flag.StringVar(&pools, "template-pools", "0,2", "warm pools to compare template creates with, comma separated")
	flag.StringVar(&o.layout, "layout", "/var/cache/hutch-ci/debian-bookworm-oci", "OCI layout of the Debian image")
	flag.BoolVar(&o.verbose, "v", false, "print the servers' logs (info and above) to stderr")
	flag.Parse()
	o.filesystems = splitList(fsList)
	o.only = map[string]bool{}
	for _, s := range splitList(only) {
		if !slices.Contains(sections, s) {
			fmt.Fprintf(os.Stderr, "storage: -only: unknown section %q (%s)\n", s, strings.Join(sections, ", "))
			os.Exit(2)
		}
		o.only[s] = true
	}
	for _, p := range splitList(pools) {
		var n int
		if _, err := fmt.Sscan(p, &n); err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "storage: -template-pools: %q is not a pool size\n", p)
			os.Exit(2)
		}
		o.tmplPools = append(o.tmplPools, n)
	}
	if o.n < 1 || o.pulls < 1 || len(o.tmplPools) == 0 {
		fmt.Fprintln(os.Stderr, "storage: -n and -pulls must be at least 1, -template-pools name at least one pool")
		os.Exit(2)
	}
	// Before anything starts: ^C ends the run with what it made removed,
	// and so does a reader that closes stdout early (| head).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	start := time.Now()
	err := run(ctx, o)
	stop()
	fmt.Fprintf(os.Stderr, "storage: the run took %s\n", time.Since(start).Round(time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "storage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root: loop devices, mounts and the namespace driver's id-mapped layers")
	}
	log := newServerLog(o.verbose)
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("hutch storage benchmark — %d CPUs, %s, kernel %s, load average %s at the start, %s\n\n",
		runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH, kernelRelease(), strings.Join(strings.Fields(string(load))[:3], " "),
		time.Now().UTC().Format("2006-01-02"))

	if o.only["fork"] || o.only["snapshot"] {
		progress("making a %d GiB image for the loop filesystems", o.fsGiB)
		img, err := newImage(ctx, o.fsGiB<<30, o.sparse)
		if err != nil {
			return err
		}
		defer img.remove()
		var all []fsResult
		for _, typ := range o.filesystems {
			r, err := measureFS(ctx, o, img, typ, log)
			if err != nil {
				return fmt.Errorf("%s: %w", typ, err)
			}
			printFS(o, r)
			all = append(all, r)
		}
		printFSSummary(o, all)
	}
	if o.only["template"] || o.only["pull"] {
		if _, err := os.Stat(o.layout + "/index.json"); err != nil {
			return fmt.Errorf("the Debian image's layout %s: %w; make it with `go test -run TestDebianAptGet ./e2e/` (as root, with debootstrap)", o.layout, err)
		}
		progress("starting docker-registry on loopback and pushing the Debian image")
		reg, err := startRegistry()
		if err != nil {
			return err
		}
		defer reg.stop()
		ref, err := reg.push(ctx, o.layout, "debian:bookworm")
		if err != nil {
			return err
		}
		if o.only["template"] {
			var res []templateResult
			for _, pool := range o.tmplPools {
				progress("templates, warm pool %d: creating from debian and from host", pool)
				r, err := measureTemplates(ctx, o, reg, ref, pool, log)
				if err != nil {
					return err
				}
				res = append(res, r)
			}
			printTemplates(o, res)
		}
		if o.only["pull"] {
			progress("pulling %s %d times each way", ref, o.pulls)
			r, err := measurePulls(ctx, o, reg, ref, log)
			if err != nil {
				return err
			}
			printPulls(r)
		}
	}
	return nil
}

// progress tells, on stderr, what the benchmark is doing now.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "storage: "+format+" …\n", args...)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func kernelRelease() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return "?"
	}
	var b []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}
