package manifest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The keys each mapping of the format may use, in the order the format
// documents them.
var (
	topKeys    = []string{"version", "web", "build", "workers"}
	webKeys    = []string{"command", "port", "health_path", "websocket_path", "websocket_protocol", "restart_after_task"}
	buildKeys  = []string{"command", "timeout_seconds"}
	workerKeys = []string{"name", "command", "restart_after_task"}
)

// Parse reads and validates a manifest; on any problem it returns a *Error
// (errors.As-able) and a nil manifest.
//
// A key given a null value (`web:` with nothing under it) counts as given
// and empty: an empty web still needs its command and port. For a scalar,
// null is the same as leaving the key out, so `build: {command: null}`
// means the preset's default and only `command: ""` skips the build check.
// Anchors and aliases are followed; merge keys ("<<") are refused.
func Parse(b []byte) (*Manifest, error) {
	if len(b) > MaxBytes {
		return nil, &Error{Problems: []Problem{{
			Message: fmt.Sprintf("is %d bytes; the limit is %d (64 KiB)", len(b), MaxBytes),
		}}}
	}
	root, p := decode(b)
	if p != nil {
		return nil, &Error{Problems: []Problem{*p}}
	}
	var c checker
	m := c.manifest(root)
	if len(c.problems) > 0 {
		return nil, c.err()
	}
	return m, nil
}

// decode parses b as exactly one YAML document and returns its root, nil
// when b holds no document at all.
func decode(b []byte) (*yaml.Node, *Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxProblem(err, b)
	}
	// An empty document after the manifest (a stray "---" at the end) is
	// harmless; each one costs the decoder at least three bytes of b.
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, syntaxProblem(err, b)
		}
		if !emptyDocument(&next) {
			return nil, &Problem{Line: next.Line, Message: "holds a second YAML document; it must hold one"}
		}
	}
	if emptyDocument(&doc) {
		return nil, nil
	}
	return doc.Content[0], nil
}

// emptyDocument reports whether doc has no content, not even "null".
func emptyDocument(doc *yaml.Node) bool {
	if len(doc.Content) == 0 {
		return true
	}
	n := doc.Content[0]
	return len(doc.Content) == 1 && isNull(n) && n.Value == "" && n.Tag == "!!null"
}

// parserErrors are the messages of the YAML parser, as against its
// scanner. yaml.v3 numbers the line of a parser error from 0 and leaves it
// out when it is 0, where it numbers a scanner error's from 1.
var parserErrors = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found undefined tag handle",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
}

// syntaxProblem turns the decoder's "yaml: line 3: could not find
// expected ':'" about b into a problem on line 3.
func syntaxProblem(err error, b []byte) *Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if l, err := strconv.Atoi(n); err == nil && l > 0 {
				line, msg = l, after
			}
		}
	}
	if slices.Contains(parserErrors, msg) {
		line++
	}
	// At the end of the input the decoder counts a line after the last.
	last := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		last++
	}
	line = min(line, last)
	return &Problem{Line: line, Message: "is not valid YAML: " + clip(msg, 200)}
}

// checker walks a manifest's nodes, collecting problems and building the
// Manifest as it goes. It only descends into the mappings and lists the
// format has, so a cycle of aliases cannot make it loop, and it stops
// looking once it has maxProblems.
type checker struct {
	problems []Problem
	full     bool
}

func (c *checker) add(line int, field, format string, args ...any) {
	if c.full {
		return
	}
	if len(c.problems) == maxProblems {
		c.full = true
		return
	}
	c.problems = append(c.problems, Problem{Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) err() *Error {
	slices.SortStableFunc(c.problems, func(a, b Problem) int { return cmp.Compare(a.Line, b.Line) })
	if c.full {
		c.problems = append(c.problems, Problem{
			Message: fmt.Sprintf("has more problems; these are the first %d", maxProblems),
		})
	}
	return &Error{Problems: c.problems}
}

func (c *checker) manifest(root *yaml.Node) *Manifest {
	if root == nil {
		root = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	// The version comes first: another version's keys may mean things
	// this one cannot judge, so an unsupported version is the only
	// problem worth reporting.
	if v := lookup(resolve(root), "version"); present(v) && !c.version(v) {
		return nil
	}
	line := resolve(root).Line
	if isNull(resolve(root)) {
		line = 0 // an empty file: no line to point at
	}
	top, ok := c.object(root, line, "", topKeys)
	if !ok {
		return nil
	}
	if top.get("version") == nil {
		c.add(top.line, "version", "is required; the supported version is %d", Version)
	}
	m := &Manifest{
		Version: Version,
		Build:   Build{TimeoutSeconds: defaultTimeoutSeconds},
	}
	if e, ok := top.fields["web"]; ok {
		m.Web = c.web(e)
	}
	if e, ok := top.fields["build"]; ok {
		c.build(e, &m.Build)
	}
	if e, ok := top.fields["workers"]; ok {
		m.Workers = c.workers(e)
	}
	return m
}

// version reports whether n is version 1, the one this package reads.
func (c *checker) version(n *yaml.Node) bool {
	r := resolve(n)
	if !isScalar(r, "!!int") {
		c.add(n.Line, "version", "must be the integer %d, not %s", Version, describe(r))
		return true // a mistyped 1, most likely: go on checking as version 1
	}
	var v int64
	if err := r.Decode(&v); err != nil {
		c.add(n.Line, "version", "is not a supported version; the supported version is %d", Version)
		return false
	}
	if v != Version {
		c.add(n.Line, "version", "version %d is not supported; the supported version is %d", v, Version)
		return false
	}
	return true
}

func (c *checker) web(e entry) *Web {
	o, ok := c.object(e.val, e.key.Line, "web", webKeys)
	if !ok {
		return nil
	}
	w := &Web{HealthPath: defaultHealthPath}
	if n := o.get("command"); n != nil {
		w.Command = c.command(n, "web.command", true)
	} else {
		c.missing(o, "command")
	}
	if n := o.get("port"); n != nil {
		w.Port = c.integer(n, "web.port", 1, 65535)
	} else {
		c.missing(o, "port")
	}
	if n := o.get("health_path"); n != nil {
		w.HealthPath = c.urlPath(n, "web.health_path")
	}
	if n := o.get("websocket_path"); n != nil {
		w.WebSocketPath = c.urlPath(n, "web.websocket_path")
	}
	if n := o.get("websocket_protocol"); n != nil {
		w.WebSocketProtocol = c.token(n, "web.websocket_protocol")
	}
	if n := o.get("restart_after_task"); n != nil {
		w.RestartAfterTask = c.boolean(n, "web.restart_after_task")
	}
	return w
}

func (c *checker) build(e entry, b *Build) {
	o, ok := c.object(e.val, e.key.Line, "build", buildKeys)
	if !ok {
		return
	}
	if n := o.get("command"); n != nil {
		s := c.command(n, "build.command", false)
		b.Command = &s
	}
	if n := o.get("timeout_seconds"); n != nil {
		b.TimeoutSeconds = c.integer(n, "build.timeout_seconds", 1, maxTimeoutSeconds)
	}
}

func (c *checker) workers(e entry) []Worker {
	r := resolve(e.val)
	if isNull(r) {
		return nil
	}
	if r.Kind != yaml.SequenceNode {
		c.add(e.val.Line, "workers", "must be a list, not %s", describe(r))
		return nil
	}
	if len(r.Content) > maxWorkers {
		c.add(e.key.Line, "workers", "has %d workers; the limit is %d", len(r.Content), maxWorkers)
	}
	var ws []Worker
	seen := make(map[string]int) // name → index of the worker that has it
	for i, item := range r.Content {
		if c.full {
			break
		}
		path := fmt.Sprintf("workers[%d]", i)
		o, ok := c.object(item, resolve(item).Line, path, workerKeys)
		if !ok {
			continue
		}
		var w Worker
		if n := o.get("name"); n != nil {
			w.Name = c.workerName(n, path+".name", i, seen)
		} else {
			c.missing(o, "name")
		}
		if n := o.get("command"); n != nil {
			w.Command = c.command(n, path+".command", true)
		} else {
			c.missing(o, "command")
		}
		if n := o.get("restart_after_task"); n != nil {
			w.RestartAfterTask = c.boolean(n, path+".restart_after_task")
		}
		ws = append(ws, w)
	}
	return ws
}

func (c *checker) workerName(n *yaml.Node, field string, i int, seen map[string]int) string {
	s, ok := c.str(n, field)
	if !ok {
		return ""
	}
	switch first, dup := seen[s]; {
	case !validName(s):
		c.add(n.Line, field, `must be 1 to %d letters, digits, "_" or "-"`, maxNameBytes)
	case s == "web":
		c.add(n.Line, field, `must not be "web", the web server's name`)
	case dup:
		c.add(n.Line, field, "%q is already the name of workers[%d]", s, first)
	default:
		seen[s] = i
	}
	return s
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > maxNameBytes {
		return false
	}
	for i := range len(s) {
		switch ch := s[i]; {
		case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9', ch == '_', ch == '-':
		default:
			return false
		}
	}
	return true
}

// command checks a shell command; required means it may not be blank.
func (c *checker) command(n *yaml.Node, field string, required bool) string {
	s, ok := c.str(n, field)
	switch {
	case !ok:
	case len(s) > maxCommandBytes:
		c.add(n.Line, field, "is %d bytes; the limit is %d (8 KiB)", len(s), maxCommandBytes)
	case strings.IndexByte(s, 0) >= 0:
		c.add(n.Line, field, "must not contain a NUL byte")
	case required && strings.TrimSpace(s) == "":
		c.add(n.Line, field, "must not be empty")
	}
	return s
}

// urlPath checks the path part of a URL the agent requests.
func (c *checker) urlPath(n *yaml.Node, field string) string {
	s, ok := c.str(n, field)
	switch {
	case !ok:
	case !strings.HasPrefix(s, "/"):
		c.add(n.Line, field, `must start with "/"`)
	case len(s) > maxPathBytes:
		c.add(n.Line, field, "is %d bytes; the limit is %d", len(s), maxPathBytes)
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		c.add(n.Line, field, "must not contain spaces or control characters")
	}
	return s
}

// token reads an HTTP token (RFC 9110): a WebSocket subprotocol's name.
func (c *checker) token(n *yaml.Node, field string) string {
	s, ok := c.str(n, field)
	if !ok {
		return ""
	}
	valid := s != "" && len(s) <= maxNameBytes
	for i := 0; valid && i < len(s); i++ {
		b := s[i]
		valid = b > ' ' && b < 0x7f && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, rune(b))
	}
	if !valid {
		c.add(n.Line, field, "must be a subprotocol name: 1-%d characters, no spaces or separators", maxNameBytes)
		return ""
	}
	return s
}

func (c *checker) str(n *yaml.Node, field string) (string, bool) {
	r := resolve(n)
	if !isScalar(r, "!!str") {
		c.add(n.Line, field, "must be a string, not %s", describe(r))
		return "", false
	}
	return r.Value, true
}

func (c *checker) integer(n *yaml.Node, field string, lo, hi int64) int {
	r := resolve(n)
	if isScalar(r, "!!float") && isDigits(strings.TrimLeft(r.Value, "+-")) {
		// Too many digits for an int64, so the decoder took it for a float.
		c.add(n.Line, field, "must be from %d to %d", lo, hi)
		return 0
	}
	if !isScalar(r, "!!int") {
		c.add(n.Line, field, "must be an integer, not %s", describe(r))
		return 0
	}
	var v int64
	if err := r.Decode(&v); err != nil || v < lo || v > hi {
		c.add(n.Line, field, "must be from %d to %d", lo, hi)
		return 0
	}
	return int(v)
}

func (c *checker) boolean(n *yaml.Node, field string) bool {
	r := resolve(n)
	var v bool
	if !isScalar(r, "!!bool") || r.Decode(&v) != nil {
		c.add(n.Line, field, "must be true or false, not %s", describe(r))
		return false
	}
	return v
}

// entry is one key of a mapping and its value, both as written (an alias
// is not yet followed).
type entry struct{ key, val *yaml.Node }

// object is a mapping whose keys have been checked.
type object struct {
	line   int    // where a missing key is reported
	path   string // the mapping's field path; "" for the top
	fields map[string]entry
}

// get returns the value of key, nil when it is absent or null.
func (o *object) get(key string) *yaml.Node {
	if e, ok := o.fields[key]; ok && present(e.val) {
		return e.val
	}
	return nil
}

func (c *checker) missing(o *object, key string) {
	c.add(o.line, join(o.path, key), "is required")
}

// object checks that n is a mapping (or null, an empty one) whose keys are
// all among known and none repeated. line is where a missing key will be
// reported: the line of the key that holds the mapping, when it has one.
func (c *checker) object(n *yaml.Node, line int, path string, known []string) (*object, bool) {
	r := resolve(n)
	o := &object{line: line, path: path, fields: make(map[string]entry)}
	if isNull(r) {
		return o, true
	}
	if r.Kind != yaml.MappingNode {
		if path == "" {
			c.add(n.Line, "", "must be a mapping with keys such as version and web, not %s", describe(r))
		} else {
			c.add(n.Line, path, "must be a mapping, not %s", describe(r))
		}
		return nil, false
	}
	for i := 0; i+1 < len(r.Content) && !c.full; i += 2 {
		k, v := r.Content[i], r.Content[i+1]
		rk := resolve(k)
		if rk.Kind != yaml.ScalarNode {
			c.add(k.Line, path, "has a key that is %s; keys must be names", describe(rk))
			continue
		}
		if rk.ShortTag() == "!!merge" {
			c.add(k.Line, path, `has a merge key ("<<"), which is not supported; write the keys out`)
			continue
		}
		name := rk.Value
		field := join(path, clip(name, 64))
		if !slices.Contains(known, name) {
			c.add(k.Line, field, "unknown key %q; the keys here are %s", clip(name, 64), strings.Join(known, ", "))
			continue
		}
		if first, dup := o.fields[name]; dup {
			c.add(k.Line, field, "is given twice; first on line %d", first.key.Line)
			continue
		}
		o.fields[name] = entry{key: k, val: v}
	}
	return o, true
}

// lookup returns the value of the first key named key in the mapping m,
// nil when there is none.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := resolve(m.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// resolve follows an alias to its anchored node. The parser refuses an
// alias of an unknown anchor, and an anchor cannot be put on an alias, so
// one step is all it takes; the bound is a guard.
func resolve(n *yaml.Node) *yaml.Node {
	for range 4 {
		if n.Kind != yaml.AliasNode || n.Alias == nil {
			break
		}
		n = n.Alias
	}
	return n
}

func isScalar(n *yaml.Node, tag string) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == tag
}

func isNull(n *yaml.Node) bool { return isScalar(n, "!!null") }

// present reports whether n is given and not null.
func present(n *yaml.Node) bool { return n != nil && !isNull(resolve(n)) }

// describe names what n is, for "must be an integer, not a string".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch tag := n.ShortTag(); tag {
	case "!!str":
		return "a string"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a floating-point number"
	case "!!bool":
		return "true or false"
	case "!!null":
		return "null"
	case "!!timestamp":
		return "a timestamp"
	case "!!binary":
		return "binary data"
	default:
		return "a value tagged " + clip(tag, 64)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// clip shortens what the file wrote to at most n bytes and an ellipsis,
// to fit in a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
