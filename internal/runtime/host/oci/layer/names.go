package layer

import "strings"

// names interns the physical paths an applier remembers (what a layer
// made, for an opaque directory; where the directories to finish are) as
// a tree of names, each stored once: memory grows with the directories
// and files made, each at most a 255-byte name, not with the 4096-byte
// paths a hostile layer can give every entry.
type names struct {
	nodes []nameNode
	index map[nameKey]int32
}

type nameNode struct {
	parent int32
	name   string
	ours   bool // Flatten: this layer made, replaced or entered it
}

type nameKey struct {
	parent int32
	name   string
}

// rootNode is the root, ".".
const rootNode = 0

func newNames() *names {
	return &names{nodes: []nameNode{{parent: -1, name: "."}}, index: map[nameKey]int32{}}
}

// lookup returns the node of phys (clean, relative, "." for the root);
// with add, the missing nodes are made.
func (n *names) lookup(phys string, add bool) (int32, bool) {
	id := int32(rootNode)
	if phys == "." {
		return id, true
	}
	for rest := phys; rest != ""; {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		child, ok := n.index[nameKey{id, c}]
		if !ok {
			if !add {
				return -1, false
			}
			c = strings.Clone(c)
			child = int32(len(n.nodes))
			n.nodes = append(n.nodes, nameNode{parent: id, name: c})
			n.index[nameKey{id, c}] = child
		}
		id = child
	}
	return id, true
}

// child is the node of name in the directory id, if there is one.
func (n *names) child(id int32, name string) (int32, bool) {
	c, ok := n.index[nameKey{id, name}]
	return c, ok
}

// path is the physical path of id.
func (n *names) path(id int32) string {
	if id == rootNode {
		return "."
	}
	var parts []string
	for ; id != rootNode; id = n.nodes[id].parent {
		parts = append(parts, n.nodes[id].name)
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteString(parts[i])
		if i > 0 {
			b.WriteByte('/')
		}
	}
	return b.String()
}

// markOurs marks phys and its ancestors as the layer's.
func (n *names) markOurs(phys string) {
	id, _ := n.lookup(phys, true)
	for id != rootNode && !n.nodes[id].ours {
		n.nodes[id].ours = true
		id = n.nodes[id].parent
	}
}
