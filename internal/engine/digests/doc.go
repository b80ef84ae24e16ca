// Package digests hashes a group replica's state for state checks (issue
// 52, ADR 0020; package checks compares the results).
//
// Model. The state machine hands over a store snapshot taken right after
// the entry that carried a check (fsm.Config.OnCheck), the same Raft index
// on every replica. Digest walks every key of the group in that snapshot,
// in key order, and hashes each hash slot's rows (key and value lengths and
// bytes, xxhash) — the system records as slotstore.SystemSlot — leaving out
// the one record that is not replicated (meta.SysRestored names the replica
// a restore laid the rows out for). The Registry does this in the
// background, one snapshot at a time and paced to a byte rate
// (Config.BytesPerSecond), and keeps the digests for the node's peers to
// ask by check ID.
//
// Digests are computed on demand, not maintained at apply: the apply path
// stays as it is (no read of the row a write replaces just to unhash it),
// and the cost is paid only when a check runs. The snapshot pins the
// group's rows for as long as the hash takes; checks wait in a short
// bounded queue, and one that finds it full is answered ErrBusy. A check
// applied more than Config.MaxAge after it was proposed — a restart
// replaying its log applies its old checks again — is not hashed
// (ErrStale): nobody waits for it.
//
// Concurrency contract. Registry.Start is called on the engine's apply
// goroutine and never blocks; Wait may be called from any goroutine;
// Close stops the one worker goroutine the Registry owns and closes every
// snapshot it still holds, and must come before the store closes.
package digests
