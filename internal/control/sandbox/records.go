package sandbox

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/internal/store"
)

// The records of live sandboxes, kept in memory for the door. A call
// through the door (open) needs its sandbox's record to check it is the
// caller's and running; reading it from the store was a SQLite query per
// exec. The store stays the record: the service keeps, in each sandbox's
// live value, the last record it wrote or read, and every write through
// the service replaces it with what the write committed (wroteRecord) or
// drops it (droppedRecord), so a state change on this server is seen by
// the next call at once. Of two records the one with the greater store
// revision (store.Sandbox.Rev) wins, so writes that finish out of order
// keep the later one; a read that began before a write and ends after it
// is not kept (the generation). On a store several control planes share,
// a write by another is told here (StoreChanged) and forgets the record
// it overtook. A record is trusted for recordTTL in any case, which
// bounds how long a write goes unseen when the store tells nothing (one
// process owns it) or the telling was lost until its resync.

// recordTTL is how long a kept record serves calls before it is read
// again.
const recordTTL = time.Second

// keptRecord is what live keeps of its sandbox's record.
type keptRecord struct {
	rec *store.Sandbox
	at  time.Time // when it was written or read
	gen uint64    // counts the writes through the service
}

// record is sandbox id's record as the caller of ctx may see it: the one
// kept in memory while it is fresh, else read from the store. The caller
// gets a copy of its own.
func (s *Service) record(ctx context.Context, id string) (*store.Sandbox, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	lv := s.lookup(id)
	var gen uint64
	if lv != nil {
		lv.mu.Lock()
		k := lv.kept
		lv.mu.Unlock()
		if k.rec != nil && time.Since(k.at) < recordTTL && sc.Sees(k.rec.TenantID) {
			cp := *k.rec
			return &cp, nil
		}
		gen = k.gen
	}
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || lv == nil {
		return rec, err
	}
	cp := *rec
	lv.mu.Lock()
	if lv.kept.gen == gen {
		lv.keep(&cp)
	}
	lv.mu.Unlock()
	return rec, nil
}

// keep keeps rec unless a later revision is kept; lv.mu is held.
func (lv *live) keep(rec *store.Sandbox) {
	if lv.kept.rec == nil || rec.Rev >= lv.kept.rec.Rev {
		lv.kept.rec, lv.kept.at = rec, time.Now()
	}
}

// wroteRecord keeps rec, which a write through the service committed, as
// its sandbox's record, when the sandbox is live here.
func (s *Service) wroteRecord(rec *store.Sandbox) {
	lv := s.lookup(rec.ID)
	if lv == nil {
		return
	}
	cp := *rec
	lv.mu.Lock()
	lv.kept.gen++
	lv.keep(&cp)
	lv.mu.Unlock()
}

// droppedRecord forgets sandbox id's kept record after a write through
// the service whose result it does not know (a failed write, which may
// have committed, or one that returns no record); the next call reads
// the store.
func (s *Service) droppedRecord(id string) {
	if lv := s.lookup(id); lv != nil {
		lv.forgetBelow(0)
	}
}

// StoreChanged forgets what c, a write the store told (store.Notifier),
// makes stale: a sandbox's kept record older than the revision written,
// or erased (revision 0), and its node if it is not live here (locate.go);
// on a resync every record and node kept. A write
// through this service comes back at the revision it kept, and is left
// alone.
func (s *Service) StoreChanged(_ context.Context, c store.Change) {
	switch c.Kind {
	case store.ChangeSandbox:
		if lv := s.lookup(c.SandboxID); lv != nil {
			lv.forgetBelow(c.Rev)
		}
		s.nodes.forget(c.SandboxID)
	case store.ChangeResync:
		for _, lv := range s.liveList() {
			lv.forgetBelow(0)
		}
		s.nodes.forgetAll()
	}
}

// forgetBelow forgets the kept record unless its revision is rev or later
// (rev 0: whatever it is), and any read under way.
func (lv *live) forgetBelow(rev int64) {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if rev != 0 && lv.kept.rec != nil && lv.kept.rec.Rev >= rev {
		return
	}
	lv.kept.gen++
	lv.kept.rec = nil
}

// updated tells the kept records what a write of sandbox id through the
// service did, and returns its results as they are.
func (s *Service) updated(id string, rec *store.Sandbox, err error) (*store.Sandbox, error) {
	s.nodes.forget(id)
	if err != nil || rec == nil {
		s.droppedRecord(id)
	} else {
		s.wroteRecord(rec)
	}
	return rec, err
}
