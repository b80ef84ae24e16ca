package chaos

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// never is the return time of an operation whose outcome is unknown: it may
// take effect at any point after its call.
const never = math.MaxInt64

// recorder collects the histories of one schedule: one per model, in the
// porcupine form, plus counters of operations by kind and outcome and of
// the idempotency checks. Safe for concurrent use.
type recorder struct {
	start time.Time

	mu       sync.Mutex
	kv       []porcupine.Operation // kvInput / kvOutput
	subs     []porcupine.Operation // subInput / subOutput
	counts   map[string]int        // "kind outcome" → operations
	idem     idemCounts
	failures []string // answers no correct server gives
	dups     []string // re-sent idempotent writes not answered as a replay
}

// idemCounts: writes with an Idempotency-Key, how many needed retries, how
// many were deliberately re-sent after a definite answer, and how many
// re-sends did not get the first answer back (a second apply).
type idemCounts struct {
	writes, retried, resent, mismatched int
}

func newRecorder() *recorder {
	return &recorder{start: time.Now(), counts: map[string]int{}}
}

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *recorder) addKV(op porcupine.Operation) {
	r.mu.Lock()
	r.kv = append(r.kv, op)
	r.mu.Unlock()
}

// kvOps is the number of key-value operations recorded so far.
func (r *recorder) kvOps() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.kv)
}

func (r *recorder) addSub(op porcupine.Operation) {
	r.mu.Lock()
	r.subs = append(r.subs, op)
	r.mu.Unlock()
}

// count records one operation of kind (e.g. "kv.cas") with its outcome.
func (r *recorder) count(kind string, o outcome) {
	r.mu.Lock()
	r.counts[kind+" "+o.String()]++
	r.mu.Unlock()
}

func (r *recorder) idemUpdate(f func(*idemCounts)) {
	r.mu.Lock()
	f(&r.idem)
	r.mu.Unlock()
}

func (r *recorder) duplicate(format string, args ...any) {
	r.mu.Lock()
	r.dups = append(r.dups, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *recorder) fail(format string, args ...any) {
	r.mu.Lock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// opsByKind renders the counters as "kind=n(ok a, refused b, …)" per kind,
// sorted by kind.
func (r *recorder) opsByKind() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	byKind := map[string]map[string]int{}
	for k, n := range r.counts {
		kind, out, _ := strings.Cut(k, " ")
		if byKind[kind] == nil {
			byKind[kind] = map[string]int{}
		}
		byKind[kind][out] += n
	}
	var kinds []string
	for k := range byKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var parts []string
	for _, k := range kinds {
		total, detail := 0, []string{}
		for _, o := range outcomeNames {
			if n := byKind[k][o]; n > 0 {
				total += n
				detail = append(detail, fmt.Sprintf("%s %d", o, n))
			}
		}
		parts = append(parts, fmt.Sprintf("%s=%d(%s)", k, total, strings.Join(detail, ", ")))
	}
	return strings.Join(parts, " ")
}

// total is the number of operations of kind with outcome o.
func (r *recorder) total(kind string, o outcome) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[kind+" "+o.String()]
}
