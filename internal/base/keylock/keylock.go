// Package keylock serialises work by key: one mutex per key, made when
// first locked and dropped when its last holder or waiter leaves, so a
// server with many sandboxes keeps only the locks in use.
package keylock

import "sync"

// Map is a set of per-key mutexes. The zero Map is ready to use.
type Map struct {
	mu sync.Mutex
	m  map[string]*entry
}

type entry struct {
	mu   sync.Mutex
	refs int
}

// Lock locks key and returns its unlock.
func (m *Map) Lock(key string) (unlock func()) {
	m.mu.Lock()
	if m.m == nil {
		m.m = map[string]*entry{}
	}
	e := m.m[key]
	if e == nil {
		e = &entry{}
		m.m[key] = e
	}
	e.refs++
	m.mu.Unlock()
	e.mu.Lock()
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Unlock()
			m.mu.Lock()
			if e.refs--; e.refs == 0 {
				delete(m.m, key)
			}
			m.mu.Unlock()
		})
	}
}

// Len is how many keys are locked or waited for.
func (m *Map) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}
