// Package presets owns the starting points a new app can be created from:
// for each, the tree of files embedded in the binary (sandbox.yaml
// included), the sandbox template it runs on, the setup command run once
// after the files are written on the app's first boot, and the build check
// used when the manifest leaves build.command out.
//
// Every preset's web server listens on 127.0.0.1 at $PORT, accepts any Host
// header (apps are reached by their public name) and honours
// HUTCH_APP_BASE: hutch serves the dev sandbox under /dev/ and strips that
// prefix before a request (HTTP or WebSocket) reaches it.
//
// The files live under files/<name>/; presets_test.go installs and runs
// each of them for real.
package presets

import (
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"slices"
)

// Preset is a named starting point for an app.
type Preset struct {
	Name        string // "react-vite"
	Description string
	// Template is the sandbox template (image) it runs on; "" means the
	// server's default root, whose userland is the host's (node, npm,
	// python3 from Debian packages).
	Template string
	// Setup is run once, in the app dir, after the files are written on
	// first boot (e.g. {"npm", "install", "--no-audit", "--no-fund"});
	// nil: nothing.
	Setup []string
	// SetupTimeoutS bounds Setup.
	SetupTimeoutS int
	// Build is the build check when the manifest leaves build.command
	// absent; "" means none.
	Build string
	// Files is the starting tree, rooted at the app dir; sandbox.yaml
	// included.
	Files fs.FS
}

// all: the trees hold dotfiles (.gitignore).
//
//go:embed all:files
var files embed.FS

var npmInstall = []string{"npm", "install", "--no-audit", "--no-fund"}

var presets = map[string]Preset{}

func init() {
	register(Preset{
		Name:          "react-vite",
		Description:   "React 18 with Vite 5: a dev server with hot module replacement",
		Setup:         npmInstall,
		SetupTimeoutS: 600,
		Build:         "npm run build",
	})
	register(Preset{
		Name:          "node-express",
		Description:   "Express 4 on Node.js, restarted on change by node --watch",
		Setup:         npmInstall,
		SetupTimeoutS: 300,
		Build:         "node --check server.js",
	})
	register(Preset{
		Name:        "python-fastapi",
		Description: "FastAPI served by uvicorn with --reload (Debian's python3-fastapi and python3-uvicorn)",
		Build:       "python3 -m py_compile main.py",
	})
	register(Preset{
		Name:        "static",
		Description: "Plain HTML, CSS and JavaScript from public/, reloaded in the browser on change",
	})
	register(Preset{
		Name:        "worker",
		Description: "A background worker and no web server: node worker.js logging a heartbeat",
	})
}

// register adds p with its embedded tree, files/<p.Name>. It panics on a
// duplicate name or a tree without a sandbox.yaml: both are mistakes in
// this package, found by its tests.
func register(p Preset) {
	if _, dup := presets[p.Name]; dup {
		panic(fmt.Sprintf("presets: %q registered twice", p.Name))
	}
	sub, err := fs.Sub(files, "files/"+p.Name)
	if err != nil {
		panic(fmt.Sprintf("presets: %q: %v", p.Name, err))
	}
	if _, err := fs.Stat(sub, "sandbox.yaml"); err != nil {
		panic(fmt.Sprintf("presets: %q has no sandbox.yaml: %v", p.Name, err))
	}
	p.Files = sub
	presets[p.Name] = p
}

// Get returns the preset named name.
func Get(name string) (Preset, bool) {
	p, ok := presets[name]
	p.Setup = slices.Clone(p.Setup) // nil stays nil
	return p, ok
}

// Names lists the presets, sorted.
func Names() []string {
	return slices.Sorted(maps.Keys(presets))
}
