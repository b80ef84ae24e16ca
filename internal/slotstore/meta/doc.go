// Package meta defines what slotmeta stores and how it is written: the entity
// types (users, business keys, …), the commands that change them, the queries
// that read them, the binary codec of all three, and the storage keys.
//
// Commands are the unit of replication. A command is built and validated by
// the API layer, encoded with a version byte, coalesced with others into one
// Raft entry by the proposer (EncodeEntry) and applied by every replica of
// the owning group. Because an encoded command is already in every replica's
// log when it is decoded, decoding never panics: a malformed command becomes
// an error result for that command alone (DecodeEntry).
//
// Entities are encoded the same way: a version byte, then fields in a fixed
// order. A new field is appended under the same version byte, and a decoder
// ignores bytes after the fields it knows, so old and new binaries read each
// other's rows; the version byte changes only for an incompatible layout,
// which needs a migration (package slotmeta/migrations).
//
// Every type has one walk of its fields, a code method over a coder
// (codec.go), which serves both directions: encoding appends each field,
// decoding reads it back into the field. The two directions of a type
// cannot disagree on order, and every limit and check in a walk holds for
// both, so EncodeCommand refuses (ErrLimit) exactly the commands every
// replica's DecodeCommand would refuse (ErrMalformed): dispatch checks a
// command by encoding it once. A field appended to a layout later is
// walked under coder.more, so rows written before it still decode. The
// generic helpers turn walks into the public codecs: one per entity
// (encodeEntity, decodeEntity), page (page, stored) and answer registration
// (registerAnswers); the golden files in testdata/golden pin the bytes.
//
// Every query declares the type of its answer (For): meta.Read answers it as
// that type, and the state machine registers each lookup with the query's own
// type and answer type, so the two cannot disagree; the answer is untyped only
// inside the state machine's Lookup, where dragonboat needs it.
//
// The package depends on the standard library and slotstore only; the Pebble
// store and the Raft state machine import it.
package meta
