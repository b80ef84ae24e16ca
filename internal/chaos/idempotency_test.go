package chaos

import (
	"bytes"
	"fmt"
	"math/rand"
	"time"
)

// Idempotency-Key checks. A write carrying a key is retried — the same
// request: same key, same body, same preconditions, to any node — after an
// unknown outcome, so it applies at most once between its first call and
// its last answer (the histories model it as one operation over that span).
// After a definite answer it is deliberately sent once more: the answer must
// be the first one replayed — same status and body (for a business key the
// same revision; for a subscriber change the same added/removed count and
// list size; for a delete 204 again, not 404) and Idempotent-Replayed: true.
// Anything else is a second apply and counts as a duplicate. A second apply
// that the re-send's answer hides still changes state the histories see
// (the re-send is not in them): a new revision of a value, or a subscriber
// set the model cannot reach.

const maxAttempts = 4 // of one idempotent write, the first included

// client is one workload goroutine: its porcupine client id and its own
// random source.
type client struct {
	id         int
	tc         endpoints
	keys       []string // the business keys it uses (nil: kvKeys)
	rec        *recorder
	rng        *rand.Rand
	retryUntil time.Time // no retry of an unknown outcome starts after it
	idemSeq    int
	idemPrefix string        // makes its keys unique across runs on one cluster (host episodes)
	backoff    time.Duration // set by an answer without a definite outcome
	quiet      *quietGate    // holds it while a quiesce schedule is quiet (nil: never)
	// smart sends through the route-aware client (to the key's leader, its
	// own retries inside one operation); every write then carries an
	// Idempotency-Key, so each is re-sent and checked for a second apply.
	smart bool
}

// do sends r to base, or through the route-aware client for a smart
// client of a cluster that has one.
func (c *client) do(base string, r request) answer {
	if s, ok := c.tc.(smartSender); ok && c.smart {
		return s.doSmart(r)
	}
	return c.tc.do(base, r)
}

// pause backs off after an answer without a definite outcome (a node
// restarting, no leader), as a client should, so that a schedule is not
// flooded with operations of unknown outcome. Back-off, not synchronisation.
func (c *client) pause() {
	c.quiet.wait()
	if c.backoff > 0 {
		time.Sleep(c.backoff)
		c.backoff = 0
	}
}

// written is a write as the history sees it.
type written struct {
	call, ret int64 // ret is never when the outcome is unknown
	ans       answer
	out       outcome
}

// idemShare is the share of writes that carry an Idempotency-Key.
const idemShare = 3 // in 10

// maybeIdem gives r an Idempotency-Key, unique in the schedule, idemShare
// times in 10 (always for a smart client).
func (c *client) maybeIdem(r *request) {
	if c.rng.Intn(10) < idemShare || c.smart {
		c.idemSeq++
		r.idemKey = fmt.Sprintf("%sidem-c%d-%d", c.idemPrefix, c.id, c.idemSeq)
	}
}

// send sends r once to a random node and classifies the answer.
func (c *client) send(r request) (answer, outcome) {
	a := c.do(c.tc.anyURL(c.rng), r)
	o, unexpected := classify(a.code)
	if o == outUnknown {
		c.backoff = a.retryAfter()
	}
	if unexpected {
		c.rec.fail("%s %s: unexpected %d %s", r.method, r.path, a.code, bytes.TrimSpace(a.body))
	}
	return a, o
}

// write sends a write (retried and re-sent as the comment at the top of
// this file says when it carries an Idempotency-Key) and
// returns it as the history sees it.
func (c *client) write(r request) written {
	w := written{call: c.rec.now()}
	w.ans, w.out = c.send(r)
	attempts := 1
	for w.out == outUnknown && r.idemKey != "" && attempts < maxAttempts && time.Now().Before(c.retryUntil) {
		c.pause()
		w.ans, w.out = c.send(r)
		attempts++
	}
	w.ret = c.rec.now()
	if w.out == outUnknown {
		w.ret = never
	}
	if r.idemKey == "" {
		return w
	}
	c.rec.idemUpdate(func(n *idemCounts) {
		n.writes++
		if attempts > 1 {
			n.retried++
		}
	})
	if w.out != outUnknown {
		c.resend(r, w.ans)
	}
	return w
}

// resend sends an idempotent write again after its definite first answer
// and checks that the answer is the first one, replayed.
func (c *client) resend(r request, first answer) {
	var again answer
	out := outUnknown
	for i := 0; i < maxAttempts && out == outUnknown; i++ {
		c.pause()
		again, out = c.send(r)
	}
	if out == outUnknown {
		return // no definite answer: nothing to compare
	}
	c.rec.idemUpdate(func(n *idemCounts) { n.resent++ })
	if why := replayMismatch(first, again); why != "" {
		c.rec.idemUpdate(func(n *idemCounts) { n.mismatched++ })
		c.rec.duplicate("Idempotency-Key %s (%s %s): applied twice? %s", r.idemKey, r.method, r.path, why)
	}
}

// replayMismatch says how again differs from a replay of first ("" if not).
func replayMismatch(first, again answer) string {
	switch {
	case again.code != first.code:
		return fmt.Sprintf("first %d %s, re-sent %d %s", first.code, bytes.TrimSpace(first.body), again.code, bytes.TrimSpace(again.body))
	case first.code < 300 && !bytes.Equal(first.body, again.body):
		return fmt.Sprintf("first %s, re-sent %s", bytes.TrimSpace(first.body), bytes.TrimSpace(again.body))
	case first.code >= 300 && first.errorCode() != again.errorCode():
		return fmt.Sprintf("first error %q, re-sent %q", first.errorCode(), again.errorCode())
	case again.header.Get("Idempotent-Replayed") != "true":
		return "the re-sent request was not answered as a replay (no Idempotent-Replayed: true)"
	}
	return ""
}
