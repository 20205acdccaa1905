package testutil

import (
	"archive/tar"
	"bytes"
	"fmt"
	"strconv"
)

// Fragment is data at an offset of a sparse file; the rest is a hole.
type Fragment struct {
	Off  int64
	Data string
}

// SparseFile is one file of a sparse tar: Size bytes, zeros but for its
// fragments (in order, apart).
type SparseFile struct {
	Name  string
	Size  int64
	Frags []Fragment
}

// Content is what the file reads as once extracted.
func (f SparseFile) Content() []byte {
	b := make([]byte, f.Size)
	for _, fr := range f.Frags {
		copy(b[fr.Off:], fr.Data)
	}
	return b
}

// SparseTar writes files in the PAX sparse format 1.0, as GNU tar's
// --sparse --format=pax does: a PAX header with GNU.sparse.name and
// GNU.sparse.realsize, then an entry named GNUSparseFile.0/<name> whose
// body is the sparse map (decimal lines, padded to a block) followed by
// the fragments' data only. archive/tar reads the format but cannot write
// it, hence the blocks by hand.
func SparseTar(files ...SparseFile) *bytes.Buffer {
	var buf bytes.Buffer
	for _, f := range files {
		records := paxRecord("GNU.sparse.major", "1") + paxRecord("GNU.sparse.minor", "0") +
			paxRecord("GNU.sparse.name", f.Name) + paxRecord("GNU.sparse.realsize", strconv.FormatInt(f.Size, 10))
		buf.Write(tarBlock("./PaxHeaders/"+f.Name, tar.TypeXHeader, int64(len(records))))
		buf.Write(padBlock([]byte(records)))
		m := strconv.Itoa(len(f.Frags)) + "\n"
		var data []byte
		for _, fr := range f.Frags {
			m += fmt.Sprintf("%d\n%d\n", fr.Off, len(fr.Data))
			data = append(data, fr.Data...)
		}
		sparseMap := padBlock([]byte(m))
		buf.Write(tarBlock("./GNUSparseFile.0/"+f.Name, tar.TypeReg, int64(len(sparseMap)+len(data))))
		buf.Write(sparseMap)
		buf.Write(padBlock(data))
	}
	buf.Write(make([]byte, 1024))
	return &buf
}

// tarBlock is a ustar header block.
func tarBlock(name string, typ byte, size int64) []byte {
	b := make([]byte, 512)
	copy(b[0:], name)
	copy(b[100:], "0000644\x00")
	copy(b[108:], "0000000\x00")
	copy(b[116:], "0000000\x00")
	copy(b[124:], fmt.Sprintf("%011o\x00", size))
	copy(b[136:], "00000000000\x00")
	b[156] = typ
	copy(b[257:], "ustar\x0000")
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// paxRecord is "<length> <key>=<value>\n", the length counting itself.
func paxRecord(k, v string) string {
	rest := " " + k + "=" + v + "\n"
	n := len(rest) + 1
	for len(strconv.Itoa(n))+len(rest) != n {
		n = len(strconv.Itoa(n)) + len(rest)
	}
	return strconv.Itoa(n) + rest
}

func padBlock(b []byte) []byte {
	if r := len(b) % 512; r != 0 {
		b = append(b, make([]byte, 512-r)...)
	}
	return b
}
