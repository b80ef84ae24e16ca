// Package watch is the node's side of the change feed (issue 27, ADR 0016):
// where the changes its replicas apply are handed to the watchers that
// follow them, and how a watcher that starts behind, or misses some, catches
// up from the stored change log without a gap or a repeat.
//
// # Model
//
// Every change of a watched row is numbered per hash slot: slot s's changes
// carry sequences 1, 2, 3, … written by the slot's group in the same batch
// as the change, and they travel with the slot when it moves to another
// group (ADR 0016). A Record is one numbered change. A watcher's position is
// a Cursor: for each hash slot it covers, the sequence of the last change it
// was given. Nothing is ordered across slots.
//
// Two sources feed a Stream, and it merges them by sequence:
//
//   - the Hub: the records each local replica publishes once its batch is
//     committed to the store, pushed into a bounded queue per subscriber.
//     Publish never blocks: a subscriber whose queue is full is cut (it is
//     a slow consumer) and learns so at its next read, with its position
//     intact to resume from;
//   - the Log: the records the store keeps (retention is per slot), read
//     when the Stream starts behind the store's head, or when a pushed
//     record shows a gap (it subscribed while the batch was being
//     committed, or a slot came to this node from elsewhere).
//
// A record at or below the position is dropped (a repeat); a record one
// past it is delivered; one further on means a gap, filled from the Log
// before anything else of that slot is given. Because a record is published
// only after its batch is committed, the Log always holds every record a
// gap can miss (unless retention dropped it: ErrCompacted).
//
// # Concurrency
//
// Hub is safe for concurrent use: Publish is called by the replicas' apply
// goroutines, Subscribe and Close by serving goroutines. A Stream belongs to
// the one goroutine that reads it (Next); its Close may be called from any.
package watch
