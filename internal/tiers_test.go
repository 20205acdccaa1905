// Package internal_test holds the layering of hutch's internal packages in
// place: the tiers of the tree (base, agent, store, runtime, control,
// edge, server) and which of them may import which, read from the Go
// tool's own list of every package's imports.
package internal_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/hutchdev/hutch/"

// The tiers, from the bottom up. A pattern that ends in "/" names a
// package and every package below it; one that does not names one
// package. A package's tier is the first whose pattern it matches.
var tiers = []struct {
	name     string
	patterns []string
	// may lists the tiers a package of this one may import, besides its
	// own.
	may []string
}{
	{"base", []string{"api/", "internal/base/"}, nil},
	{"sdk", []string{"client/"}, []string{"base"}},
	{"agent", []string{"internal/agent/"}, []string{"base"}},
	// The suites every driver and every store passes, and the tests'
	// helpers: linked only into tests.
	{"testsuite", []string{"internal/testutil/", "internal/runtime/driver/drivertest/", "internal/store/storetest/"},
		[]string{"base", "agent", "store", "runtime"}},
	{"store", []string{"internal/store/"}, []string{"base"}},
	{"runtime", []string{"internal/runtime/"}, []string{"base", "agent"}},
	{"control", []string{"internal/control/"}, []string{"base", "agent", "store", "runtime"}},
	{"edge", []string{"internal/edge/"}, []string{"base", "control"}},
	{"server", []string{"internal/server/"}, []string{"base", "agent", "store", "runtime", "control", "edge"}},
	{"cmd", []string{"cmd/"}, []string{"base", "sdk", "agent", "server"}},
	{"bench", []string{"bench/"}, []string{"base", "sdk", "agent", "testsuite", "store", "runtime", "control", "edge", "server"}},
	{"e2e", []string{"e2e/"}, []string{"base", "sdk", "testsuite"}},
}

// rule is a refusal beyond the tiers' order: no package matching from
// imports one matching to, unless it matches one of except.
type rule struct {
	from, to string
	except   []string
	why      string
}

var rules = []rule{
	{from: "internal/agent/", to: "internal/agent/agentclient/",
		why: "the agent's client is the control plane's, never linked into the agent"},
	{from: "internal/control/", to: "internal/agent/", except: []string{"internal/agent/agentclient"},
		why: "the control tier reaches agents only through the agent client, which converts the protocol into the service's own types"},
	{from: "internal/control/", to: "internal/runtime/driver/", except: []string{"internal/runtime/driver"},
		why: "the control tier sees drivers through the driver contract (internal/runtime/driver), never an implementation"},
	{from: "internal/control/", to: "internal/store/", except: []string{"internal/store"},
		why: "the control tier holds the store contract, never an implementation"},
	{from: "internal/runtime/driver", to: "internal/runtime/",
		why: "the driver contract imports only the API types, base and the agent protocol"},
	{from: "internal/runtime/driver", to: "internal/agent/", except: []string{"internal/agent/agentproto"},
		why: "the driver contract imports only the API types, base and the agent protocol"},
	{from: "internal/runtime/host/", to: "internal/runtime/driver/",
		why: "host facilities know nothing of drivers"},
}

// allowed are today's leaks: importer → imported, and what mends each.
// The test fails when one is mended and still listed, so the list only
// shrinks.
var allowed = map[string]string{}

// TestTiers holds every package's imports to its tier and to the rules.
func TestTiers(t *testing.T) {
	pkgs := list(t)
	seen := map[string]bool{}
	var bad []string
	for _, p := range pkgs {
		from := strings.TrimPrefix(p.ImportPath, module)
		ft := tierOf(from)
		if ft < 0 {
			bad = append(bad, fmt.Sprintf("%s is in no tier: put it under one of internal/{base,agent,store,runtime,control,edge,server}", from))
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := strings.TrimPrefix(imp, module)
			why := refusal(from, to)
			if why == "" {
				continue
			}
			pair := from + " → " + to
			if allowed[pair] != "" {
				seen[pair] = true
				continue
			}
			bad = append(bad, fmt.Sprintf("%s: %s", pair, why))
		}
	}
	for pair, mend := range allowed {
		if !seen[pair] {
			bad = append(bad, fmt.Sprintf("%s is mended (%s): take it off the allowed list", pair, mend))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// refusal says why from may not import to, or "" when it may.
func refusal(from, to string) string {
	ft, tt := tierOf(from), tierOf(to)
	if tt < 0 {
		return to + " is in no tier"
	}
	if ft != tt && !slices.Contains(tiers[ft].may, tiers[tt].name) {
		return fmt.Sprintf("the %s tier does not import the %s tier", tiers[ft].name, tiers[tt].name)
	}
	for _, r := range rules {
		if under(from, r.from) && under(to, r.to) && !slices.ContainsFunc(r.except, func(e string) bool { return under(to, e) }) {
			return r.why
		}
	}
	return ""
}

// under says whether path matches pattern: is it, or is below it when it
// ends in "/".
func under(path, pattern string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/"); ok {
		return path == dir || strings.HasPrefix(path, pattern)
	}
	return path == pattern
}

func tierOf(path string) int {
	for i, tr := range tiers {
		for _, p := range tr.patterns {
			if under(path, p) {
				return i
			}
		}
	}
	return -1
}

type pkg struct {
	ImportPath string
	Dir        string
	Imports    []string
	GoFiles    []string
}

// list is every package of the module with its imports (test files' left
// out: tests may reach across tiers to set up what they test).
func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,Imports,GoFiles,Standard", module+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			pkg
			Standard bool
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		// A folder of tests alone (this one) imports nothing.
		if !p.Standard && strings.HasPrefix(p.ImportPath, module) && len(p.GoFiles) > 0 {
			pkgs = append(pkgs, p.pkg)
		}
	}
	if len(pkgs) < 50 {
		t.Fatalf("go list found %d packages of the module; expected them all", len(pkgs))
	}
	return pkgs
}
