package peer

import (
	"crypto/sha256"
	"crypto/subtle"
	"slices"
	"sync/atomic"
	"time"
)

// maxOldSecrets bounds the secrets accepted besides the current one;
// MaxAcceptedSecrets those a node is told to accept without an end (room is
// left for a rotation's overlap).
const (
	maxOldSecrets      = 4
	MaxAcceptedSecrets = 3
)

// Secret is the cluster secret of peer RPC, rotatable without a restart.
//
// Rotation. Set installs the next secret: calls carry it from then on, and
// each earlier one is still accepted until its own overlap ends (a second
// rotation within the overlap does not cut the first one short). A node
// whose call is refused for its secret (a peer that has not been given the
// new one yet) retries that call with the earlier secrets, newest first,
// while they last — so a rolling change, every node given the new secret
// within the overlap, fails no call. Accept adds secrets accepted without
// an end (the secret file's further lines): how a node restarted in the
// middle of a rotation still takes its peers' old secret.
//
// Concurrency contract: safe for concurrent use; Set and Accept swap an
// immutable state atomically.
type Secret struct {
	state atomic.Pointer[secretState]
	now   func() time.Time
}

type oldSecret struct {
	digest [sha256.Size]byte
	text   string
	until  time.Time // zero: no end (Accept)
}

type secretState struct {
	current     [sha256.Size]byte
	currentText string
	old         []oldSecret // newest first, bounded by maxOldSecrets
}

// NewSecret returns a secret with no earlier one.
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
	now := s.now()
	st := &secretState{current: sha256.Sum256([]byte(next)), currentText: next,
		old: []oldSecret{{digest: old.current, text: old.currentText, until: now.Add(overlap)}}}
	for _, o := range old.old {
		if o.text != next && (o.until.IsZero() || now.Before(o.until)) && len(st.old) < maxOldSecrets {
			st.old = append(st.old, o)
		}
	}
	s.state.Store(st)
}

// Accept makes secrets accepted without an end — not sent first, tried
// after a refusal like any earlier secret — until a later Accept leaves
// them out; a listed secret of a running overlap loses its end. Earlier
// secrets of running overlaps stay, expired ones go; at most maxOldSecrets
// in all (the listed ones first).
func (s *Secret) Accept(secrets []string) {
	old := s.state.Load()
	now := s.now()
	st := &secretState{current: old.current, currentText: old.currentText}
	for _, t := range secrets {
		if t != old.currentText && len(st.old) < maxOldSecrets && !slices.ContainsFunc(st.old, func(o oldSecret) bool { return o.text == t }) {
			st.old = append(st.old, oldSecret{digest: sha256.Sum256([]byte(t)), text: t})
		}
	}
	for _, o := range old.old {
		if !o.until.IsZero() && now.Before(o.until) && len(st.old) < maxOldSecrets && !slices.ContainsFunc(st.old, func(x oldSecret) bool { return x.text == o.text }) {
			st.old = append(st.old, o)
		}
	}
	s.state.Store(st)
}

// Current is the secret calls carry.
func (s *Secret) Current() string { return s.state.Load().currentText }

// Previous lists the earlier secrets still accepted, newest first.
func (s *Secret) Previous() []string {
	now := s.now()
	var out []string
	for _, o := range s.state.Load().old {
		if o.until.IsZero() || now.Before(o.until) {
			out = append(out, o.text)
		}
	}
	return out
}

// OverlapUntil is when the last running overlap ends (zero when none runs).
func (s *Secret) OverlapUntil() time.Time {
	now := s.now()
	var last time.Time
	for _, o := range s.state.Load().old {
		if !o.until.IsZero() && now.Before(o.until) && o.until.After(last) {
			last = o.until
		}
	}
	return last
}

// Accepts reports whether got is the current secret or an earlier one
// still accepted. Every comparison runs, in constant time over digests.
func (s *Secret) Accepts(got string) bool {
	st := s.state.Load()
	now := s.now()
	d := sha256.Sum256([]byte(got))
	ok := subtle.ConstantTimeCompare(d[:], st.current[:])
	for _, o := range st.old {
		live := 0
		if o.until.IsZero() || now.Before(o.until) {
			live = 1
		}
		ok |= subtle.ConstantTimeCompare(d[:], o.digest[:]) & live
	}
	return ok == 1
}
