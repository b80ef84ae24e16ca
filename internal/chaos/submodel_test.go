package chaos

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The subscriber model: one set per channel (partitioned by channel) over a
// small universe of uids (subUIDs), a bit mask. Adds and removes answer how
// many uids they changed and the list's size after them; DELETE of one uid
// answers 404 when it is not a subscriber; a list and a membership test are
// linearizable reads. A change whose outcome is unknown may or may not have
// applied.

var subUIDs = []string{"u0", "u1", "u2", "u3", "u4"}

type subOp uint8

const (
	subAdd    subOp = iota // POST …/subscribers {uids}
	subRemove              // POST …/subscribers/remove {uids}
	subDelete              // DELETE …/subscribers/{uid}
	subList                // GET …/subscribers
	subHas                 // GET …/subscribers/{uid}
)

var subOpNames = [...]string{"add", "remove", "delete", "list", "has"}

type subInput struct {
	Op      subOp
	Channel string
	UIDs    uint8 // add, remove: the uids; delete, has: one uid
}

type subOutput struct {
	Out     outcome
	Changed int   // add, remove: added / removed
	Count   int   // add, remove: the list's size after
	Members uint8 // list
	Foreign bool  // list: a uid outside subUIDs came back
}

func subStep(s uint8, in subInput, out subOutput) []any {
	switch in.Op {
	case subAdd, subRemove:
		next := s | in.UIDs
		changed := bits.OnesCount8(in.UIDs &^ s)
		if in.Op == subRemove {
			next, changed = s&^in.UIDs, bits.OnesCount8(in.UIDs&s)
		}
		switch out.Out {
		case outOK:
			if out.Changed == changed && out.Count == bits.OnesCount8(next) {
				return []any{next}
			}
		case outUnknown:
			return []any{s, next}
		}
	case subDelete:
		switch out.Out {
		case outOK:
			if s&in.UIDs != 0 {
				return []any{s &^ in.UIDs}
			}
		case outNotFound:
			if s&in.UIDs == 0 {
				return []any{s}
			}
		case outUnknown:
			return []any{s, s &^ in.UIDs}
		}
	case subList:
		if out.Out == outOK && !out.Foreign && out.Members == s {
			return []any{s}
		}
	case subHas:
		if out.Out == outOK && s&in.UIDs != 0 || out.Out == outNotFound && s&in.UIDs == 0 {
			return []any{s}
		}
	}
	return nil
}

var subModel = porcupine.NondeterministicModel{
	Partition: partitionBy(func(in any) string { return in.(subInput).Channel }),
	Init:      func() []any { return []any{uint8(0)} },
	Step: func(state, input, output any) []any {
		return subStep(state.(uint8), input.(subInput), output.(subOutput))
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(subInput), output.(subOutput)
		head := fmt.Sprintf("%s(%s", subOpNames[in.Op], in.Channel)
		if in.Op != subList {
			head += "," + uidList(in.UIDs)
		}
		switch {
		case out.Out != outOK:
			return head + ") → " + out.Out.String()
		case in.Op == subList:
			return head + ") → " + uidList(out.Members)
		case in.Op == subAdd || in.Op == subRemove:
			return fmt.Sprintf("%s) → changed %d, count %d", head, out.Changed, out.Count)
		}
		return head + ") → ok"
	},
	DescribeState: func(state any) string { return uidList(state.(uint8)) },
}

// uidList renders a mask as {u0,u3}.
func uidList(mask uint8) string { return "{" + strings.Join(maskUIDs(mask), ",") + "}" }

// uidMask is the mask of uids (foreign: one is not in subUIDs).
func uidMask(uids []string) (mask uint8, foreign bool) {
	for _, u := range uids {
		i := slices.Index(subUIDs, u)
		if i < 0 {
			foreign = true
			continue
		}
		mask |= 1 << i
	}
	return mask, foreign
}
