package confine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Classic BPF opcodes the seccomp filter uses.
const (
	opLoadAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS  // A = 32-bit word at offset k
	opAnd     = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K // A &= k
	opJeq     = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K // A == k ? jt : jf
	opJge     = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K // A >= k ? jt : jf
	opJset    = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	opJa      = unix.BPF_JMP | unix.BPF_JA // jump k forward
	opRet     = unix.BPF_RET | unix.BPF_K  // return k
)

// asm assembles a classic BPF program whose jumps name labels instead of
// counting instructions, so a filter reads top to bottom. Jumps go forward
// only, as classic BPF requires; "" as a target means the next instruction.
type asm struct {
	prog   []asmInsn
	labels map[string]int
	err    error
	fresh  int // labels newLabel has made
}

type asmInsn struct {
	code   uint16
	k      uint32
	jt, jf string // targets of a conditional jump
	ja     string // target of an unconditional jump
}

func (a *asm) emit(in asmInsn) { a.prog = append(a.prog, in) }

// label names the next instruction.
func (a *asm) label(name string) {
	if a.labels == nil {
		a.labels = make(map[string]int)
	}
	if _, dup := a.labels[name]; dup && a.err == nil {
		a.err = fmt.Errorf("bpf: label %q defined twice", name)
	}
	a.labels[name] = len(a.prog)
}

func (a *asm) load(off uint32)              { a.emit(asmInsn{code: opLoadAbs, k: off}) }
func (a *asm) and(k uint32)                 { a.emit(asmInsn{code: opAnd, k: k}) }
func (a *asm) jeq(k uint32, jt, jf string)  { a.emit(asmInsn{code: opJeq, k: k, jt: jt, jf: jf}) }
func (a *asm) jge(k uint32, jt, jf string)  { a.emit(asmInsn{code: opJge, k: k, jt: jt, jf: jf}) }
func (a *asm) jset(k uint32, jt, jf string) { a.emit(asmInsn{code: opJset, k: k, jt: jt, jf: jf}) }
func (a *asm) jump(to string)               { a.emit(asmInsn{code: opJa, ja: to}) }
func (a *asm) ret(k uint32)                 { a.emit(asmInsn{code: opRet, k: k}) }
func (a *asm) retErrno(errno unix.Errno) {
	a.ret(unix.SECCOMP_RET_ERRNO | uint32(errno)&unix.SECCOMP_RET_DATA)
}

// newLabel returns a label no caller names: it starts with a dot.
func (a *asm) newLabel() string {
	a.fresh++
	return fmt.Sprintf(".L%d", a.fresh)
}

// span is a run of values, from lo up to the next span's lo, that all go to
// the label to.
type span struct {
	lo uint32
	to string
}

// dispatch jumps to the label of the span holding the accumulator, by a
// binary search over spans, which must start at 0 and rise. Each comparison
// is followed by an unconditional jump, whose offset has 32 bits, so no
// conditional jump reaches further than one instruction however many spans
// there are (a conditional offset has 8 bits).
func (a *asm) dispatch(spans []span) {
	if len(spans) == 0 || spans[0].lo != 0 {
		a.fail(fmt.Errorf("bpf: dispatch spans do not start at 0"))
		return
	}
	for i := 1; i < len(spans); i++ {
		if spans[i].lo <= spans[i-1].lo {
			a.fail(fmt.Errorf("bpf: dispatch span %d does not rise", i))
			return
		}
	}
	a.search(spans)
}

func (a *asm) search(spans []span) {
	if len(spans) == 1 {
		a.jump(spans[0].to)
		return
	}
	mid := len(spans) / 2
	below, above := a.newLabel(), a.newLabel()
	a.jge(spans[mid].lo, "", below)
	a.jump(above)
	a.label(below)
	a.search(spans[:mid])
	a.label(above)
	a.search(spans[mid:])
}

func (a *asm) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

func (a *asm) offset(at int, to string) (int, error) {
	if to == "" {
		return 0, nil
	}
	pos, ok := a.labels[to]
	if !ok {
		return 0, fmt.Errorf("bpf: instruction %d jumps to undefined label %q", at, to)
	}
	if pos <= at {
		return 0, fmt.Errorf("bpf: instruction %d jumps backwards to %q", at, to)
	}
	return pos - at - 1, nil
}

// assemble resolves the labels.
func (a *asm) assemble() ([]unix.SockFilter, error) {
	if a.err != nil {
		return nil, a.err
	}
	if len(a.prog) == 0 || len(a.prog) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("bpf: program of %d instructions (want 1 to %d)", len(a.prog), unix.BPF_MAXINSNS)
	}
	if last := a.prog[len(a.prog)-1]; last.code != opRet && last.code != opJa {
		return nil, fmt.Errorf("bpf: program does not end with a return")
	}
	out := make([]unix.SockFilter, len(a.prog))
	for i, in := range a.prog {
		f := unix.SockFilter{Code: in.code, K: in.k}
		if in.code == opJa {
			off, err := a.offset(i, in.ja)
			if err != nil {
				return nil, err
			}
			f.K = uint32(off)
		}
		for _, c := range []struct {
			to  string
			dst *uint8
		}{{in.jt, &f.Jt}, {in.jf, &f.Jf}} {
			off, err := a.offset(i, c.to)
			if err != nil {
				return nil, err
			}
			if off > 255 {
				return nil, fmt.Errorf("bpf: instruction %d jumps %d ahead to %q, beyond 255", i, off, c.to)
			}
			*c.dst = uint8(off)
		}
		out[i] = f
	}
	return out, nil
}
