package ctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/slotmeta/slotmeta/client"
)

// stdin is where batch-write reads its operations by default.
var stdin io.Reader = os.Stdin

// kv batch-write [put K V | del K]...: POST /v1/batch/kv/write. With no
// operations as arguments they are read as JSON from --file (default
// stdin). The exit code is 0 when every operation was applied, else that
// of the first failed one (a failed condition: 4) — the operations of its
// hash slot that were fine answer aborted, and are not what failed.
func kvBatchWrite(c *cmd) int {
	file := c.fs.String("file", "", "read the operations from `FILE` (- is stdin; the default without operation arguments): "+
		`JSON objects like {"op":"put","key":"k","value":"v","if_match":3} — one a line, an array of them, or the API's {"ops":[…]}`)
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	var ops []client.KVBatchOp
	var err error
	switch {
	case len(pos) > 0 && *file != "":
		return c.usageError("give the operations as arguments or in --file, not both")
	case len(pos) > 0:
		ops, err = opsOfArgs(pos)
	case *file == "" || *file == "-":
		ops, err = opsOfJSON(stdin)
	default:
		var f *os.File
		if f, err = os.Open(*file); err == nil {
			ops, err = opsOfJSON(f)
			f.Close()
		}
	}
	if err == nil && len(ops) == 0 {
		err = errors.New("no operations given")
	}
	if err != nil {
		return c.usageError(err.Error())
	}
	r, err := c.api.BatchWriteKVWithResponse(c.ctx, &client.BatchWriteKVParams{}, client.BatchKVWrite{Ops: ops}, c.idempotent)
	return replyBatch(c, r, err, func(t *table) {
		t.header("KEY", "OP", "OK", "REVISION", "ERROR")
		for _, it := range r.JSON200.Items {
			t.row(it.Key, it.Op, it.Ok, it.Revision, itemError(it.Error))
		}
	})
}

// opsOfArgs reads "put K V" and "del K" (or "delete K") in a row.
func opsOfArgs(args []string) ([]client.KVBatchOp, error) {
	var ops []client.KVBatchOp
	for i := 0; i < len(args); {
		switch args[i] {
		case "put":
			if i+2 >= len(args) {
				return nil, fmt.Errorf("operation %d: want put KEY VALUE", len(ops)+1)
			}
			ops = append(ops, client.KVBatchOp{Op: ptr("put"), Key: ptr(args[i+1]), Value: ptr(args[i+2])})
			i += 3
		case "del", "delete":
			if i+1 >= len(args) {
				return nil, fmt.Errorf("operation %d: want del KEY", len(ops)+1)
			}
			ops = append(ops, client.KVBatchOp{Op: ptr("delete"), Key: ptr(args[i+1])})
			i += 2
		default:
			return nil, fmt.Errorf("operation %d: %q is neither put nor del", len(ops)+1, args[i])
		}
	}
	return ops, nil
}

// opsOfJSON reads operations: JSON objects one after another (JSON lines),
// arrays of them, or the API's own body {"ops": […]}. A member the API does
// not know is an error here, not a silently dropped condition.
func opsOfJSON(r io.Reader) ([]client.KVBatchOp, error) {
	dec := json.NewDecoder(r)
	var ops []client.KVBatchOp
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return ops, nil
		} else if err != nil {
			return nil, fmt.Errorf("operations: %v", err)
		}
		raw = bytes.TrimSpace(raw)
		var err error
		switch {
		case len(raw) > 0 && raw[0] == '[':
			var more []client.KVBatchOp
			err = strict(raw, &more)
			ops = append(ops, more...)
		case isBody(raw):
			var body client.BatchKVWrite
			err = strict(raw, &body)
			ops = append(ops, body.Ops...)
		default:
			var op client.KVBatchOp
			err = strict(raw, &op)
			ops = append(ops, op)
		}
		if err != nil {
			return nil, fmt.Errorf("operation %d: %v", len(ops)+1, err)
		}
	}
}

// isBody says raw is an object with an "ops" member: the API's body.
func isBody(raw []byte) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return false
	}
	_, ok := members["ops"]
	return ok
}

func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func ptr[T any](v T) *T { return &v }
