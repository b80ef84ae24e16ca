// Package backup owns the on-disk format of a cluster backup (issue 29):
// a directory of checksummed chunk files and one manifest that names them.
//
// Model. A backup is a set of streams — each group's image (the same
// self-checking image a Raft snapshot carries, package fsm) and the
// controller's state (the audit trail is part of it, not a stream of its
// own) — each cut into chunk files of at most the size given to Create
// (chunkBytes: DefaultChunkBytes when none, at most MaxChunkBytes, the
// largest Verify accepts), named "<stream>.<n>" (n from 0, four digits at
// least). The manifest (manifest.json) records the format version, the
// cluster's id, the backup's id and time, and per stream its chunks (name,
// bytes, SHA-256) and its whole length and SHA-256, plus what the caller
// adds (per group: the applied index of its image, the hash slots it owned
// and each slot's change-log position). The manifest is written last,
// synced and renamed into place: a directory without one is a partial
// backup. It carries the SHA-256 of its own body, so a manifest changed
// after it was written is refused like a changed chunk.
//
// Verify checks a directory before anything reads it: the manifest's
// checksum, a format no newer than this code's (FormatVersion), the
// cluster id the caller expects (a foreign backup), every chunk present
// with its size and checksum, every stream whole, and no chunk file the
// manifest does not name. Each refusal wraps ErrInvalid and says what is
// wrong, so a restore can refuse before it writes anything. Open then
// reads a stream back, checking every chunk again as it goes.
//
// Concurrency contract. A Writer and its streams belong to one goroutine;
// Verify, Open and ReadManifest only read the directory and may run from
// any goroutine. Nothing here takes locks on the directory: one backup at
// a time per directory is the caller's rule (Create refuses a directory
// that is not empty).
package backup
