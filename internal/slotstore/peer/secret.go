package peer

import (
	"crypto/sha256"
	"crypto/subtle"
	"sync/atomic"
	"time"
)

// Secret is the cluster secret of peer RPC, rotatable without a restart.
//
// Rotation. Set installs the next secret: calls carry it from then on, and
// the previous one is still accepted until the overlap ends. A node whose
// call is refused for its secret (a peer that has not been given the new
// one yet) retries that call once with the previous secret while the
// overlap lasts, so a rolling change — every node given the new secret
// within the overlap — fails no call. After the overlap only the new secret
// opens a node.
//
// Concurrency contract: safe for concurrent use; Set swaps an immutable
// state atomically.
type Secret struct {
	state atomic.Pointer[secretState]
	now   func() time.Time
}

type secretState struct {
	current, previous [sha256.Size]byte
	currentText       string
	previousText      string
	previousUntil     time.Time // zero: no previous secret
}

// NewSecret returns a secret with no previous one.
func NewSecret(s string) *Secret {
	sec := &Secret{now: time.Now}
	sec.state.Store(&secretState{current: sha256.Sum256([]byte(s)), currentText: s})
	return sec
}

// Set makes next the secret calls carry; the current one is still
// accepted for overlap. Setting the current secret again changes nothing.
func (s *Secret) Set(next string, overlap time.Duration) {
	old := s.state.Load()
	if next == old.currentText {
		return
	}
	s.state.Store(&secretState{current: sha256.Sum256([]byte(next)), currentText: next,
		previous: old.current, previousText: old.currentText, previousUntil: s.now().Add(overlap)})
}

// Current is the secret calls carry.
func (s *Secret) Current() string { return s.state.Load().currentText }

// Previous is the previous secret while the overlap lasts.
func (s *Secret) Previous() (string, bool) {
	st := s.state.Load()
	if st.previousUntil.IsZero() || !s.now().Before(st.previousUntil) {
		return "", false
	}
	return st.previousText, true
}

// OverlapUntil is when the previous secret stops being accepted (zero when
// no overlap runs).
func (s *Secret) OverlapUntil() time.Time {
	st := s.state.Load()
	if st.previousUntil.IsZero() || !s.now().Before(st.previousUntil) {
		return time.Time{}
	}
	return st.previousUntil
}

// Accepts reports whether got is the current secret, or the previous one
// within the overlap. Both comparisons run, in constant time over digests.
func (s *Secret) Accepts(got string) bool {
	st := s.state.Load()
	d := sha256.Sum256([]byte(got))
	cur := subtle.ConstantTimeCompare(d[:], st.current[:])
	prev := subtle.ConstantTimeCompare(d[:], st.previous[:])
	inOverlap := !st.previousUntil.IsZero() && s.now().Before(st.previousUntil)
	return cur == 1 || (prev == 1 && inOverlap)
}
