package sandbox

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
)

var update = flag.Bool("update", false, "write the state machine into docs/ARCHITECTURE.md")

// architecture is the document the state machine is rendered into.
const architecture = "../../../docs/ARCHITECTURE.md"

// The markers around the rendered part of docs/ARCHITECTURE.md.
const (
	beginStates = "<!-- state machine: rendered from internal/control/sandbox/state.go by TestStateDiagram (go test ./internal/control/sandbox -run TestStateDiagram -update) -->"
	endStates   = "<!-- end of the state machine -->"
)

// TestStateDiagram holds docs/ARCHITECTURE.md's state diagram and tables
// to the tables of state.go; with -update it writes them there.
func TestStateDiagram(t *testing.T) {
	doc, err := os.ReadFile(architecture)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(doc), beginStates+"\n")
	if !ok {
		t.Fatalf("%s has no line %q", architecture, beginStates)
	}
	old, after, ok := strings.Cut(rest, endStates)
	if !ok {
		t.Fatalf("%s has no line %q after the first marker", architecture, endStates)
	}
	want := renderStates()
	if old == want {
		return
	}
	if *update {
		if err := os.WriteFile(architecture, []byte(before+beginStates+"\n"+want+endStates+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/ARCHITECTURE.md's state machine is not state.go's; run go test ./internal/control/sandbox -run TestStateDiagram -update\nwant:\n%s", want)
}

// renderStates is the diagram and the two tables, in Markdown.
func renderStates() string {
	var b strings.Builder
	b.WriteString("```mermaid\nstateDiagram-v2\n")
	b.WriteString("    [*] --> creating: create\n")
	type pair struct{ from, to api.SandboxState }
	var pairs []pair
	ops := map[pair][]string{}
	for _, e := range table {
		for _, from := range e.from {
			p := pair{from, e.to}
			if _, ok := ops[p]; !ok {
				pairs = append(pairs, p)
			}
			if !slices.Contains(ops[p], string(e.op)) {
				ops[p] = append(ops[p], string(e.op))
			}
		}
	}
	for _, p := range pairs {
		fmt.Fprintf(&b, "    %s --> %s: %s\n", p.from, p.to, strings.Join(ops[p], ", "))
	}
	b.WriteString("    destroyed --> [*]\n```\n\n")
	b.WriteString("| operation | from | to | when |\n|---|---|---|---|\n")
	b.WriteString("| create | (none) | creating | the record is written, before its driver is called |\n")
	for _, e := range table {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", e.op, joinStates(e.from), e.to, e.what)
	}
	b.WriteString("\nOperations that need a sandbox in some states and leave it in the state they found:\n\n")
	b.WriteString("| operation | in | refused with | what it does |\n|---|---|---|---|\n")
	for _, n := range needs {
		fmt.Fprintf(&b, "| %s | %s | `409 %s` | %s |\n", n.op, joinStates(n.in), n.code, n.what)
	}
	return b.String()
}

func joinStates(ss []api.SandboxState) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// TestStateTable: every state is reached and left as the API says, no
// edge is listed twice, and every operation of the table is used.
func TestStateTable(t *testing.T) {
	all := []api.SandboxState{creating, starting, running, pausedS, stopping, stopped, destroying, destroyed, failed}
	seen := map[[2]string]bool{}
	reached, left := map[api.SandboxState]bool{creating: true}, map[api.SandboxState]bool{destroyed: true}
	for _, e := range table {
		k := [2]string{string(e.op), string(e.to)}
		if seen[k] {
			t.Errorf("the edge %s to %s is listed twice", e.op, e.to)
		}
		seen[k] = true
		if len(e.from) == 0 || e.what == "" {
			t.Errorf("the edge %s to %s says no state it leaves or not when", e.op, e.to)
		}
		reached[e.to] = true
		for _, f := range e.from {
			left[f] = true
		}
	}
	for _, st := range all {
		if !reached[st] {
			t.Errorf("no edge leads to %s", st)
		}
		if !left[st] && st != failed {
			t.Errorf("no edge leaves %s", st)
		}
	}
}

// TestTransitionsUseTheTable reads this package's code: every change of
// state goes through transition (no store.Transition outside state.go),
// and each transition whose operation and state are written out names an
// edge of the table.
func TestTransitionsUseTheTable(t *testing.T) {
	consts := map[string]string{}
	for _, name := range []string{"OpCreate", "OpStart", "OpStop", "OpPause", "OpResume", "OpRestore", "OpDestroy", "OpFail", "OpRecover"} {
		consts[name] = ""
	}
	for _, e := range table {
		for name := range consts {
			if strings.EqualFold(strings.TrimPrefix(name, "Op"), string(e.op)) {
				consts[name] = string(e.op)
			}
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "store" && sel.Sel.Name == "Transition" && name != "state.go" {
				t.Errorf("%s calls store.Transition; a change of state goes through transition and the table", name)
			}
			if sel.Sel.Name != "transition" || len(call.Args) < 4 {
				return true
			}
			op, ok1 := call.Args[2].(*ast.Ident)
			to, ok2 := call.Args[3].(*ast.SelectorExpr)
			if !ok1 || !ok2 || consts[op.Name] == "" {
				return true // an operation passed in: its callers name it
			}
			state := api.SandboxState(strings.ToLower(strings.TrimPrefix(to.Sel.Name, "State")))
			if _, ok := edgeOf(Op(consts[op.Name]), state); !ok {
				t.Errorf("%s: transition by %s to %s is not an edge of the table", name, consts[op.Name], state)
			}
			checked++
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("found %s transitions to check; the reading of the code is broken", strconv.Itoa(checked))
	}
}
