package confine

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// seccompData is struct seccomp_data, what a filter runs on.
type seccompData struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

// bytes lays d out as the kernel does on a little-endian machine.
func (d seccompData) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], d.nr)
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// runBPF interprets the subset of classic BPF that asm emits, with the
// kernel's semantics, and returns what the program returns. It fails on
// anything the kernel's checker would refuse: a jump out of the program,
// a load out of the data, falling off the end, an unknown opcode.
func runBPF(prog []unix.SockFilter, data []byte) (uint32, error) {
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		jump := func(cond bool) {
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		}
		switch in.Code {
		case opLoadAbs:
			if int(in.K)+4 > len(data) || in.K%4 != 0 {
				return 0, fmt.Errorf("pc %d: load at %d outside the data", pc, in.K)
			}
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case opAnd:
			acc &= in.K
		case opJeq:
			jump(acc == in.K)
		case opJge:
			jump(acc >= in.K)
		case opJset:
			jump(acc&in.K != 0)
		case opJa:
			pc += int(in.K)
		case opRet:
			return in.K, nil
		default:
			return 0, fmt.Errorf("pc %d: opcode %#x not interpreted", pc, in.Code)
		}
		if pc+1 > len(prog) {
			return 0, fmt.Errorf("pc %d: jump beyond the program", pc)
		}
	}
	return 0, fmt.Errorf("fell off the end of the program")
}

func TestAsmResolvesLabels(t *testing.T) {
	var a asm
	a.load(0)
	a.jeq(7, "seven", "")
	a.jge(100, "big", "")
	a.jump("small")
	a.label("seven")
	a.ret(1)
	a.label("big")
	a.ret(2)
	a.label("small")
	a.ret(3)
	prog, err := a.assemble()
	if err != nil {
		t.Fatal(err)
	}
	want := []unix.SockFilter{
		{Code: opLoadAbs, K: 0},
		{Code: opJeq, K: 7, Jt: 2, Jf: 0},
		{Code: opJge, K: 100, Jt: 2, Jf: 0},
		{Code: opJa, K: 2},
		{Code: opRet, K: 1},
		{Code: opRet, K: 2},
		{Code: opRet, K: 3},
	}
	if len(prog) != len(want) {
		t.Fatalf("got %d instructions, want %d: %+v", len(prog), len(want), prog)
	}
	for i := range want {
		if prog[i] != want[i] {
			t.Errorf("instruction %d = %+v, want %+v", i, prog[i], want[i])
		}
	}
	for _, tc := range []struct{ nr, want uint32 }{{7, 1}, {100, 2}, {500, 2}, {3, 3}} {
		got, err := runBPF(prog, seccompData{nr: tc.nr}.bytes())
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("nr %d returned %d, want %d", tc.nr, got, tc.want)
		}
	}
}

func TestAsmRefusesBadPrograms(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(a *asm)
		want  string
	}{
		{"undefined label", func(a *asm) { a.jeq(1, "nowhere", ""); a.ret(0) }, "undefined label"},
		{"backward jump", func(a *asm) { a.label("top"); a.load(0); a.jeq(1, "top", ""); a.ret(0) }, "backwards"},
		{"label twice", func(a *asm) { a.label("x"); a.load(0); a.label("x"); a.ret(0) }, "defined twice"},
		{"no return at end", func(a *asm) { a.load(0) }, "does not end with a return"},
		{"empty", func(a *asm) {}, "program of 0 instructions"},
		{"jump too far", func(a *asm) {
			a.load(0)
			a.jeq(1, "far", "")
			for range 256 {
				a.load(0)
			}
			a.label("far")
			a.ret(0)
		}, "beyond 255"},
		{"too long", func(a *asm) {
			for range unix.BPF_MAXINSNS {
				a.load(0)
			}
			a.ret(0)
		}, "program of 4097 instructions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a asm
			tc.build(&a)
			_, err := a.assemble()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("assemble error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestAsmDispatch: a search over more spans than a conditional jump can
// cross lands every value on its span's label.
func TestAsmDispatch(t *testing.T) {
	var a asm
	a.load(0)
	var spans []span
	for i := range 600 {
		spans = append(spans, span{lo: uint32(3 * i), to: fmt.Sprintf("r%d", i%3)})
	}
	a.dispatch(spans)
	for i := range 3 {
		a.label(fmt.Sprintf("r%d", i))
		a.ret(uint32(i))
	}
	prog, err := a.assemble()
	if err != nil {
		t.Fatal(err)
	}
	for _, nr := range []uint32{0, 1, 2, 3, 5, 6, 899, 900, 1000, 1797, 1799, 1800, 5000, 1 << 31} {
		want := min(nr/3, 599) % 3
		got, err := runBPF(prog, seccompData{nr: nr}.bytes())
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("nr %d returned %d, want %d", nr, got, want)
		}
	}
}

func TestAsmDispatchRefusesBadSpans(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spans []span
		want  string
	}{
		{"none", nil, "do not start at 0"},
		{"not from 0", []span{{lo: 1, to: "x"}}, "do not start at 0"},
		{"not rising", []span{{lo: 0, to: "x"}, {lo: 5, to: "y"}, {lo: 5, to: "x"}}, "does not rise"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a asm
			a.load(0)
			a.dispatch(tc.spans)
			a.label("x")
			a.label("y")
			a.ret(0)
			_, err := a.assemble()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("assemble error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
