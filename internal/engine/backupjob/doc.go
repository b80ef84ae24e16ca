// Package backupjob takes backups of the whole cluster on one node (issue
// 29) into directories of the format package backup owns.
//
// Model. A backup is one job on the node asked for it, at most one at a
// time per node. It reads the controller's state, then writes each
// group's image (fsm.WriteImage: the format a Raft snapshot carries) —
// from this node's replica when it holds one, after a linearizable read
// round, so that every write acknowledged before the backup started is in
// it; otherwise, or when that fails, from the group's leader's node over
// peer RPC (the backup-image endpoint, whose reads are rate-limited so that
// serving goes on, and which must finish within a peer call's bound); and
// when the leader's node fails too, from every other node of the group's
// peers in turn, until one gives a whole image (job.go). The controller's
// state is read again at the end and written whole (nodes, routing table,
// groups, tasks, the audit trail); idempotency records are rows of the
// groups, in their images.
//
// Consistency across groups is per hash slot: slotmeta orders nothing
// across slots, so a backup is a state every slot had — each slot as of
// its group's image, the manifest recording its change-log position. The
// one thing that could make images disagree is a slot moving between
// groups while they are taken (a migration, split or merge): the job
// checks that every hash slot is owned by exactly one image, and takes the
// images of the groups concerned again (a bounded number of rounds, a
// pause between them) until they agree, or fails saying so. Nothing stops
// writers: a backup costs them only the reads it makes.
//
// A job that fails leaves its directory without a manifest (a partial
// backup, refused by backup.Verify); a node that restarts lists such a
// directory as partial.
//
// Concurrency contract. StartBackup, Backups and Backup may be called from any
// goroutine. The Runner owns the job's goroutine: Close cancels it and
// waits for it. The peer endpoint serves from the peer server's goroutines.
package backupjob
