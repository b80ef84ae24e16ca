package propose

import (
	"sync"
	"time"
)

// Leader leases: linearizable reads on the leader without a ReadIndex round.
//
// A ReadIndex round that starts at time s and completes while this replica
// leads in term T proves that a quorum took this replica's heartbeat of term
// T after s. Each of those followers reset its election tick on it and, with
// CheckQuorum (dragonboat: raft.dropRequestVoteFromHighTermNode), drops every
// vote and pre-vote request until it has counted ElectionRTT ticks without
// hearing from the leader. Ticks come from one ticker per NodeHost and are
// queued in order with the messages, so none counted on the heartbeat
// predates it, and a ticker never fires faster than its period (it may hand
// over one pending tick late, hence a tick of margin more). So no other
// replica can be elected before s + (ElectionRTT−2)·RTT, and until then
// every entry anyone committed, applied or acknowledged is at or below this
// leader's commit index. A round under the lease therefore asks its own Raft
// for the commit index (no network: LeasedReadIndex), waits until the
// state machine applied it, and answers every read that waited for it —
// the wait matters: a follower's ReadIndex, or a proposal dragonboat passed
// on to this leader from a follower, may already have shown an entry this
// leader has committed but not yet applied.
//
// What the proof leans on, and how each holds here:
//   - a voter that restarts forgets its leader and would vote at once: a
//     replica starts no sooner than a lease after its node's NodeHost did,
//     or after the same group's replica last stopped in this process
//     (replicas.Config.StartWait), so every lease it acknowledged has ended;
//   - a leader transfer's candidate carries a hint that makes followers
//     vote within their election timeout: every transfer revokes the lease
//     on the leader first (after checking it still leads) and holds off new
//     grants until the transfer attempt is long over (Revoke);
//   - clocks advance at about the same rate on every node (a tenth of the
//     lease is margin), a suspended machine's monotonic clock stops with it
//     (a leader resumed from suspend may serve until Raft tells it of the
//     new term); a lease is no longer than the shortest Raft timing among
//     the group's replicas allows (LimitBy; the nodes report theirs).
//
// Concurrency contract: every method may be called from any goroutine.
type Lease struct {
	dur time.Duration
	now func() time.Time

	mu      sync.Mutex
	term    uint64               // the term the lease was granted in
	until   time.Time            // the lease ends (zero: none)
	blocked time.Time            // rounds that started before this grant nothing
	limit   func() time.Duration // the longest lease the group's replicas allow now (LimitBy)
	grants  uint64               // grants that extended the lease
	reads   uint64               // reads the lease served
}

// LeaseDuration is how long a confirmation of leadership lasts as a lease
// for the given Raft timing: (ElectionRTT−3) ticks — a follower may count
// two ticks at once just after the heartbeat (a ticker keeps one tick
// pending) — less a tenth for clock rate differences. Zero when the timing
// leaves no room.
func LeaseDuration(rtt time.Duration, electionRTT uint64) time.Duration {
	if electionRTT <= 3 {
		return 0
	}
	return time.Duration(electionRTT-3) * rtt * 9 / 10
}

// NewLease returns a lease of duration dur (0: never valid) on clock now
// (nil: time.Now, whose monotonic reading the comparisons use).
func NewLease(dur time.Duration, now func() time.Time) *Lease {
	if now == nil {
		now = time.Now
	}
	return &Lease{dur: dur, now: now}
}

// LimitBy makes every grant at most f() long (0 or less: none): the
// shortest lease the timing of the group's replicas allows. Set before the
// lease is used.
func (l *Lease) LimitBy(f func() time.Duration) { l.limit = f }

// Now is the time to take before a confirming round starts, for Grant.
func (l *Lease) Now() time.Time {
	if l == nil {
		return time.Now()
	}
	return l.now()
}

// Valid reports whether the lease covers now for a replica that leads in
// term.
func (l *Lease) Valid(term uint64) bool {
	if l == nil || l.dur <= 0 {
		return false
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	return term != 0 && term == l.term && now.Before(l.until)
}

// served counts a round of reads answered under the lease.
func (l *Lease) served() {
	l.mu.Lock()
	l.reads++
	l.mu.Unlock()
}

// Grant records that a round started at start confirmed this replica's
// leadership in term. A round that started before the last revocation's
// hold ended grants nothing; a grant never shortens the lease of its term.
func (l *Lease) Grant(term uint64, start time.Time) {
	if l == nil || l.dur <= 0 || term == 0 {
		return
	}
	dur := l.dur
	if l.limit != nil {
		dur = min(dur, l.limit())
	}
	if dur <= 0 {
		return
	}
	until := start.Add(dur)
	l.mu.Lock()
	defer l.mu.Unlock()
	if start.Before(l.blocked) {
		return
	}
	if term != l.term || until.After(l.until) {
		if term < l.term {
			return
		}
		l.term, l.until = term, until
		l.grants++
	}
}

// Revoke ends the lease now and makes rounds that start within hold grant
// nothing: a leader transfer under way lets a follower vote before its
// election timeout, so no confirmation taken during it means anything.
func (l *Lease) Revoke(hold time.Duration) {
	if l == nil {
		return
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.until = time.Time{}
	if b := now.Add(hold); b.After(l.blocked) {
		l.blocked = b
	}
}

// Stats returns the grants that extended the lease and the rounds of reads
// it answered (for tests and metrics).
func (l *Lease) Stats() (grants, reads uint64) {
	if l == nil {
		return 0, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.grants, l.reads
}
