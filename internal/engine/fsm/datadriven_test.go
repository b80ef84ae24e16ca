package fsm_test

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestApplyDataDriven runs the apply path from testdata/apply/*: each file
// is a history of entries applied to one group on a real store, in the
// manner of etcd-io/raft's interaction tests. Rewrite the expectations with
// `go test ./internal/engine/fsm -run TestApplyDataDriven -rewrite`.
//
// Directives:
//
//	group slots=<from>-<to>        a fresh group 1 owning hash slots [from, to] (default: all)
//	apply [index=N] [time=MS]      one entry; one command per input line:
//	                                 put <key> <value> [if-rev=N|if-absent|if-exists] [idem=<k>]
//	                                 delete <key> [if-rev=N|if-exists] [idem=<k>]
//	                                 create-user <uid> <name> [idem=<k>]
//	                                 put-user <uid> <name>
//	                                 delete-user <uid>
//	                                 fence <slot> | unfence <slot>
//	                               prints one line per result: code, revision, replayed
//	apply-raw [index=N]            one entry whose payload is the input, in hex
//	get <key>                      the key's value and revision, or "absent"
//	user <uid>                     the user's name and revision, or "absent"
//	state                          applied index, owned and fenced hash slots
func TestApplyDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/apply", func(t *testing.T, path string) {
		var s *fsm.StateMachine
		var next uint64 = 1
		open := func(slots []slotstore.HashSlot) {
			s = newSM(t, openStore(t, t.TempDir()), 1, slots)
			next = 1
		}
		open(allSlots())
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "group":
				slots := allSlots()
				if d.HasArg("slots") {
					var r string
					d.ScanArgs(t, "slots", &r)
					from, to, _ := strings.Cut(r, "-")
					a, _ := strconv.Atoi(from)
					b, _ := strconv.Atoi(to)
					slots = slotRange(a, b+1)
				}
				open(slots)
				return ""
			case "apply", "apply-raw":
				index := next
				if d.HasArg("index") {
					d.ScanArgs(t, "index", &index)
				}
				next = index + 1
				var data []byte
				var names []string
				if d.Cmd == "apply-raw" {
					b, err := hex.DecodeString(strings.Join(strings.Fields(d.Input), ""))
					if err != nil {
						t.Fatalf("%s: %v", d.Pos, err)
					}
					data = b
				} else {
					timeMs := int64(1000)
					if d.HasArg("time") {
						d.ScanArgs(t, "time", &timeMs)
					}
					var cmds []meta.Command
					for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
						cmds = append(cmds, parseCommand(t, d, line, timeMs))
						names = append(names, strings.Join(strings.Fields(line)[:min(2, len(strings.Fields(line)))], " "))
					}
					data = encodeCmds(cmds...)
				}
				var b strings.Builder
				for i, r := range applyRaw(t, s, index, data) {
					name := "entry"
					if i < len(names) {
						name = names[i]
					}
					fmt.Fprintf(&b, "%s: %s rev=%d", name, codeOf(r), r.Revision)
					if r.Replayed {
						b.WriteString(" replayed")
					}
					b.WriteString("\n")
				}
				return b.String()
			case "get":
				kv := getKV(t, s, d.CmdArgs[0].Key)
				if kv == nil {
					return "absent\n"
				}
				return fmt.Sprintf("%s=%s rev=%d\n", kv.Key, kv.Value, kv.Revision)
			case "user":
				u := getUser(t, s, d.CmdArgs[0].Key)
				if u == nil {
					return "absent\n"
				}
				return fmt.Sprintf("%s name=%s rev=%d\n", u.UID, u.Name, u.Revision)
			case "state":
				owned, fenced, _ := s.Ownership()
				return fmt.Sprintf("applied=%d owned=%s fenced=%v\n", s.AppliedIndex(), slotSpans(owned), fenced)
			}
			t.Fatalf("%s: unknown directive %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

func codeOf(r meta.Result) string {
	if r.OK() {
		return "ok"
	}
	return string(r.Code)
}

// parseCommand reads one command line of an apply directive.
func parseCommand(t *testing.T, d *datadriven.TestData, line string, timeMs int64) meta.Command {
	f := strings.Fields(line)
	opts := map[string]string{}
	var args []string
	for _, w := range f[1:] {
		if k, v, ok := strings.Cut(w, "="); ok {
			opts[k] = v
		} else if w == "if-absent" || w == "if-exists" {
			opts[w] = ""
		} else {
			args = append(args, w)
		}
	}
	need := func(n int) {
		if len(args) < n {
			t.Fatalf("%s: %q needs %d arguments", d.Pos, line, n)
		}
	}
	cond := meta.Cond{}
	if v, ok := opts["if-rev"]; ok {
		rev, _ := strconv.ParseUint(v, 10, 64)
		cond = meta.Cond{Kind: meta.CondIfRevision, Revision: rev}
	}
	if _, ok := opts["if-absent"]; ok {
		cond.Kind = meta.CondIfAbsent
	}
	if _, ok := opts["if-exists"]; ok {
		cond.Kind = meta.CondIfExists
	}
	var c meta.Command
	switch f[0] {
	case "put":
		need(2)
		c = &meta.PutKV{Key: args[0], Value: []byte(args[1]), Cond: cond}
	case "delete":
		need(1)
		c = &meta.DeleteKV{Key: args[0], Cond: cond}
	case "create-user":
		need(2)
		c = &meta.CreateUser{User: meta.User{UID: args[0], Name: args[1]}}
	case "put-user":
		need(2)
		c = &meta.PutUser{User: meta.User{UID: args[0], Name: args[1]}}
	case "delete-user":
		need(1)
		c = &meta.DeleteUser{UID: args[0]}
	case "fence", "unfence":
		need(1)
		hs, _ := strconv.Atoi(args[0])
		h := meta.Header{HashSlot: slotstore.HashSlot(hs), TimeMs: timeMs}
		if f[0] == "fence" {
			return &meta.FenceSlot{Header: h}
		}
		return &meta.UnfenceSlot{Header: h}
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, f[0])
	}
	*c.Head() = meta.Header{HashSlot: slotstore.HashSlotOfString(c.RouteKey()), TimeMs: timeMs, IdempotencyKey: opts["idem"]}
	return c
}

// slotSpans renders hash slots as from-to spans.
func slotSpans(slots []slotstore.HashSlot) string {
	var parts []string
	for i := 0; i < len(slots); {
		j := i
		for j+1 < len(slots) && slots[j+1] == slots[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(int(slots[i])))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", slots[i], slots[j]))
		}
		i = j + 1
	}
	return "[" + strings.Join(parts, ",") + "]"
}
