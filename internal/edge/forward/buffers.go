package forward

import "sync"

// bufferSize is a copy buffer's size: what httputil.ReverseProxy
// allocates for each response it copies when it has no pool.
const bufferSize = 32 << 10

// buffers are the hop's copy buffers (httputil.BufferPool), reused from
// one forwarded response to the next: without them every hop allocated
// and cleared 32 KiB, about a fifth of the forwarding node's CPU for a
// small request (bench/README.md, fleet).
type buffers struct{ pool sync.Pool }

// Get returns a buffer of bufferSize bytes.
func (b *buffers) Get() []byte {
	if p, ok := b.pool.Get().(*[]byte); ok {
		return *p
	}
	return make([]byte, bufferSize)
}

// Put gives buf back for another copy.
func (b *buffers) Put(buf []byte) {
	if cap(buf) < bufferSize {
		return
	}
	buf = buf[:bufferSize]
	b.pool.Put(&buf)
}
