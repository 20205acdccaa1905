package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/bench/internal/benchserver"
	"github.com/hutchdev/hutch/internal/server/config"
)

// templateResult is what creates from each template cost with one warm
// pool.
type templateResult struct {
	pool    int
	storage api.StorageInfo
	bytes   int64 // the Debian image's files, unpacked
	// create and createExec are by template: "host", "debian".
	create, createExec map[string][]time.Duration
}

// templateNames are the templates compared, the floor first.
var templateNames = []string{"host", "debian"}

// measureTemplates starts a server in the system's temporary directory
// with a warm pool of pool, pulls the Debian image as template "debian"
// (untimed), then times o.n creates from each of host and debian, in
// turns, each followed by one exec of `true` and destroyed (untimed).
func measureTemplates(ctx context.Context, o options, reg *registry, ref string, pool int, log *serverLog) (r templateResult, retErr error) {
	r.pool = pool
	r.create, r.createExec = map[string][]time.Duration{}, map[string][]time.Duration{}
	bs, err := benchserver.StartIn(ctx, "", log.logger(), func(cfg *config.Config) {
		cfg.AgentPath = o.agent
		cfg.Driver = "namespace"
		cfg.WarmPool = pool
		cfg.RegistryInsecure = []string{reg.host}
	})
	if err != nil {
		return r, err
	}
	defer bs.Stop(ctx)
	c := bs.Client
	own := newOwned(c)
	defer func() { retErr = errors.Join(retErr, own.cleanup(ctx)) }()
	info, err := c.Info(ctx)
	if err != nil {
		return r, err
	}
	if info.Storage != nil {
		r.storage = *info.Storage
	}
	tmpl, err := c.PullTemplate(ctx, api.CreateTemplateRequest{Name: "debian", Ref: ref})
	if err != nil {
		return r, fmt.Errorf("pull %s: %w", ref, err)
	}
	r.bytes = tmpl.Bytes
	trueCmd := api.ExecRequest{Cmd: []string{"true"}}
	for i := -1; i < o.n; i++ { // -1: a warm-up of each
		// In turns, the first of a round alternating (host, debian,
		// debian, host, …): each follows the other's destroy as often.
		order := templateNames
		if i%2 != 0 {
			order = []string{templateNames[1], templateNames[0]}
		}
		for _, name := range order {
			start := time.Now()
			sb, err := own.create(ctx, api.CreateSandboxRequest{Template: name, Root: true})
			created := time.Since(start)
			if err != nil {
				return r, fmt.Errorf("create from %s: %w", name, err)
			}
			res, err := c.Exec(ctx, sb.ID, trueCmd)
			first := time.Since(start)
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			if err != nil {
				return r, fmt.Errorf("first exec in a sandbox from %s: %w", name, err)
			}
			if err := own.destroy(ctx, sb.ID); err != nil {
				return r, err
			}
			if i >= 0 {
				r.create[name] = append(r.create[name], created)
				r.createExec[name] = append(r.createExec[name], first)
			}
		}
	}
	return r, nil
}

// pullResult is what pulling the Debian image cost each way.
type pullResult struct {
	storage        api.StorageInfo
	bytes          int64 // unpacked, as the template says
	hutch          []time.Duration
	skopeo, umoci  []time.Duration
	skopeoAndUmoci []time.Duration
}

// measurePulls starts a server in the system's temporary directory and
// times o.pulls rounds of: a pull of ref into a new template, deleted
// after (untimed; the deletion collects its layer, so the next pull
// unpacks again); then skopeo copy of ref into a new OCI layout and umoci
// unpack of it into a new bundle, both in the system's temporary
// directory too, removed after (untimed). Neither way syncs what it wrote;
// each starts after a syncfs, so neither pays for writing back the other's
// files.
func measurePulls(ctx context.Context, o options, reg *registry, ref string, log *serverLog) (r pullResult, retErr error) {
	bs, err := benchserver.StartIn(ctx, "", log.logger(), func(cfg *config.Config) {
		cfg.AgentPath = o.agent
		cfg.Driver = "namespace"
		cfg.WarmPool = 0
		cfg.RegistryInsecure = []string{reg.host}
	})
	if err != nil {
		return r, err
	}
	defer bs.Stop(ctx)
	c := bs.Client
	info, err := c.Info(ctx)
	if err != nil {
		return r, err
	}
	if info.Storage != nil {
		r.storage = *info.Storage
	}
	layers := filepath.Join(bs.DataDir(), "layers")
	work, err := os.MkdirTemp("", "hutch-bench-umoci-")
	if err != nil {
		return r, err
	}
	defer func() { retErr = errors.Join(retErr, os.RemoveAll(work)) }()
	env := skopeoEnv(reg.dir)

	for i := 0; i < o.pulls; i++ {
		// Nothing unpacked before a pull: the last one's layer was
		// collected.
		if n, err := entries(filepath.Join(layers, "sha256"), filepath.Join(layers, "flat")); err != nil || n > 0 {
			return r, fmt.Errorf("the layer store holds %d entries before pull %d (%v); the deleted template's layers were not collected", n, i, err)
		}
		// Each way starts with nothing of the round before still to be
		// written back.
		if err := syncfs(work); err != nil {
			return r, err
		}
		name := fmt.Sprintf("pull%d", i)
		start := time.Now()
		tmpl, err := c.PullTemplate(ctx, api.CreateTemplateRequest{Name: name, Ref: ref})
		d := time.Since(start)
		if err != nil {
			return r, fmt.Errorf("pull %d: %w", i, err)
		}
		r.bytes = tmpl.Bytes
		r.hutch = append(r.hutch, d)
		if err := c.DeleteTemplate(ctx, name); err != nil {
			return r, fmt.Errorf("delete template %s: %w", name, err)
		}

		if err := syncfs(work); err != nil {
			return r, err
		}
		image := filepath.Join(work, fmt.Sprintf("oci%d", i))
		bundle := filepath.Join(work, fmt.Sprintf("bundle%d", i))
		ds, err := runTool(ctx, env, "skopeo", "--insecure-policy", "copy", "--quiet", "--src-tls-verify=false",
			"docker://"+ref, "oci:"+image+":bookworm")
		if err != nil {
			return r, err
		}
		du, err := runTool(ctx, nil, "umoci", "unpack", "--image", image+":bookworm", bundle)
		if err != nil {
			return r, err
		}
		r.skopeo = append(r.skopeo, ds)
		r.umoci = append(r.umoci, du)
		r.skopeoAndUmoci = append(r.skopeoAndUmoci, ds+du)
		if err := errors.Join(os.RemoveAll(image), os.RemoveAll(bundle)); err != nil {
			return r, err
		}
	}
	return r, nil
}

// entries counts what the directories hold.
func entries(dirs ...string) (int, error) {
	n := 0
	for _, d := range dirs {
		es, err := os.ReadDir(d)
		if err != nil {
			return n, err
		}
		n += len(es)
	}
	return n, nil
}
