package chaos

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Checks of a finished history besides linearizability: no acknowledged
// write lost, and no write applied twice.

// lostReport counts acknowledged writes (kv puts and deletes, subscriber
// changes) and those the final reads show lost.
type lostReport struct {
	acked, lost int
	details     []string
}

// mayFollow reports whether write x could have taken effect after write w:
// unless x answered before w was sent. x may be acknowledged or of unknown
// outcome (which may apply at any time after its call); a write refused or
// answered 404 changed nothing and is never passed here.
func mayFollow(x, w porcupine.Operation) bool { return x.Return >= w.Call }

// checkLostKV: the final read of a key shows the effect of one write (a put
// of its value — values are unique — or a delete). Every acknowledged write
// of the key must be that write, or be followed by it: otherwise it was
// lost. Concretely, an acknowledged write W is lost when the final read
//   - shows a value whose put cannot have taken effect after W (it answered
//     before W was sent, or it has a lower revision than a put W), or
//   - shows the key absent while W is a put and no delete may follow W.
func checkLostKV(ops []porcupine.Operation, final map[string]kvOutput, r *lostReport) {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range ops {
		in, out := op.Input.(kvInput), op.Output.(kvOutput)
		if in.Op == kvGet || out.Out == outRefused || out.Out == outNotFound {
			continue
		}
		byKey[in.Key] = append(byKey[in.Key], op)
	}
	for key, writes := range byKey {
		got := final[key]
		for i, w := range writes {
			in, out := w.Input.(kvInput), w.Output.(kvOutput)
			if out.Out != outOK {
				continue
			}
			r.acked++
			if explains(writes, i, func(x kvInput) bool {
				if got.Out == outNotFound {
					return x.Op == kvDelete
				}
				return x.Op == kvPut && x.Value == got.Value
			}) && !(in.Op == kvPut && got.Out == outOK && out.Revision > got.Revision) {
				continue
			}
			r.lost++
			what := fmt.Sprintf("put(%s,%s) @%d", key, in.Value, out.Revision)
			if in.Op == kvDelete {
				what = fmt.Sprintf("delete(%s)", key)
			}
			r.details = append(r.details, fmt.Sprintf("%s acknowledged; the final read (%s %s@%d) cannot follow it",
				what, got.Out, got.Value, got.Revision))
		}
	}
}

// explains reports whether the final state can be the effect of writes[i]
// or of a write that may follow it (final says which writes produce it).
func explains[In any](writes []porcupine.Operation, i int, final func(In) bool) bool {
	for j, x := range writes {
		if final(x.Input.(In)) && (j == i || mayFollow(x, writes[i])) {
			return true
		}
	}
	return false
}

// checkLostSubs: per channel and uid, likewise: the final list shows the
// uid present (the effect of an add) or absent (of a remove or delete), and
// every acknowledged change of the uid must be such a change or be followed
// by one.
func checkLostSubs(ops []porcupine.Operation, final map[string]uint8, r *lostReport) {
	type chanUID struct {
		ch  string
		bit uint8
	}
	byUID := map[chanUID][]porcupine.Operation{}
	for _, op := range ops {
		in, out := op.Input.(subInput), op.Output.(subOutput)
		if in.Op == subList || in.Op == subHas || out.Out == outNotFound {
			continue
		}
		for i := range subUIDs {
			if bit := uint8(1) << i; in.UIDs&bit != 0 {
				byUID[chanUID{in.Channel, bit}] = append(byUID[chanUID{in.Channel, bit}], op)
			}
		}
	}
	for cu, writes := range byUID {
		present := final[cu.ch]&cu.bit != 0
		for i, w := range writes {
			if w.Output.(subOutput).Out != outOK {
				continue
			}
			r.acked++
			if explains(writes, i, func(x subInput) bool { return (x.Op == subAdd) == present }) {
				continue
			}
			r.lost++
			in := w.Input.(subInput)
			r.details = append(r.details, fmt.Sprintf("%s(%s,%s) acknowledged; the final list %s cannot follow it",
				subOpNames[in.Op], cu.ch, uidList(cu.bit), uidList(final[cu.ch])))
		}
	}
}

// checkDuplicatesKV: values are unique per write, so a value seen with two
// revisions (in a write's answer or a read) was applied twice.
func checkDuplicatesKV(ops []porcupine.Operation) (dups []string) {
	revs := map[string]uint64{}
	for _, op := range ops {
		in, out := op.Input.(kvInput), op.Output.(kvOutput)
		if out.Out != outOK || in.Op == kvDelete {
			continue
		}
		v := in.Value
		if in.Op == kvGet {
			v = out.Value
		}
		if prev, ok := revs[v]; ok && prev != out.Revision {
			dups = append(dups, fmt.Sprintf("value %s of key %s seen at revisions %d and %d", v, in.Key, prev, out.Revision))
		}
		revs[v] = out.Revision
	}
	return dups
}
