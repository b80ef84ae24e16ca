// Package tasks carries out the controller's tasks — replica moves,
// hash-slot migrations, group creations, splits and merges — on the
// controller leader, one step per round.
//
// Model. A task's state lives only in the replicated controller state. Every
// step reads what it acts on (the group's Raft membership, the slot's rows),
// does at most one change, and advances the task by compare-and-set on its
// phase, recording what it observed; so a new controller leader resumes a
// task where the old one left it, and a crash between "did it" and
// "recorded it" repeats a no-op. A step that cannot complete within
// PhaseTimeout fails the task with its reason and changes nothing more: the
// old membership keeps serving; asking for the same task again resumes it.
// The exceptions are the points of no return: a replica move's commit (Raft
// has the new membership by then) and a slot's handover (acquire, release,
// switch: the target may own the slot while the source holds it fenced)
// are retried until they complete rather than left half done.
//
// A replica move: add the target as a learner, wait until it caught up,
// promote it, hand leadership to it if the old replica leads, remove the old
// voter, commit the new desired peers (config epoch +1). A hash-slot
// migration moves the slot live (Live, as every migration, split and merge
// created now does): the source logs the slot's changes (track), its rows go
// to the target in bounded chunks (copy), the logged changes follow until a
// round finds few (catch_up), the source fences the slot (fence) and the
// changes logged before the fence follow (drain), the target acquires it,
// the source releases it, and the route switches (revision +1). A task
// created before live moves (Live false) keeps the old fenced order: fence,
// copy, acquire, switch, release (controller/slotmigration.go). A group
// creation: the group's intent is committed with the task; wait until it
// has a leader and every desired peer as a voter (cancelled: retire the
// group). Splits and merges move each of their slots through a migration's
// phases in turn (controller/splitmerge.go).
//
// Concurrency contract. An Executor is driven by one goroutine (the
// controller leader's observe loop); everything it does goes through Node,
// whose methods bound themselves by the context given.
package tasks
