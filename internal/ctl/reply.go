package ctl

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/slotmeta/slotmeta/client"
)

// reply ends a command that made one request and shows its answer: err
// (no answer) is reported by netError, an answer without the success body
// the command expects is refused (the server's error and its exit code),
// else the body is shown — as the server wrote it with -o json, else as
// rows writes it (rows may read the success body: it is there).
func reply[R any](c *cmd, r *R, err error, rows func(t *table)) int {
	body, code, ok := answered(c, r, err)
	if !ok {
		return code
	}
	return c.show(body, rows)
}

// replyBatch is reply for a batch (kv batch-get, kv batch-write), which
// answers 200 with an item per key: its exit code is that of its failed
// item, told once on stderr (a batch write's items aborted because another
// of their hash slot failed come last), 0 when none failed.
func replyBatch[R any](c *cmd, r *R, err error, rows func(t *table)) int {
	body, code, ok := answered(c, r, err)
	if !ok {
		return code
	}
	code = c.show(body, rows)
	var batch struct {
		Items []struct{ Error *client.Error }
	}
	if json.Unmarshal(body, &batch) != nil { // the generated parser read it: cannot fail
		return code
	}
	var failed *client.Error
	for _, it := range batch.Items {
		if it.Error != nil && (failed == nil || failed.Code == client.ErrorCodeAborted) {
			failed = it.Error
		}
	}
	if failed == nil {
		return code
	}
	code = exitCodeOf(failed.Code, 0, failed.Retryable)
	if c.s.cfg.Output != "json" {
		c.errorLine(client.Error{Code: failed.Code, Message: "an item failed: " + failed.Message}, code)
	}
	return code
}

// answered is reply without the showing, for a command that shows
// something else than the body (a delete's 204, several pages): ok false,
// the failure was reported and code is the command's exit code.
func answered[R any](c *cmd, r *R, err error) (body []byte, code int, ok bool) {
	if err != nil {
		return nil, c.netError(err), false
	}
	resp, body, ok := answerOf(r)
	if !ok {
		return nil, c.refused(resp, body), false
	}
	return body, exitOK, true
}

// answerOf reads the fields every generated *client.…Response has: Body,
// HTTPResponse, and a JSON<status> field per documented status with a JSON
// body, which the generated parser sets when that status came with one.
// ok: a 2xx with its body parsed, or a 204 where no 2xx has a body (a
// delete: nothing to parse; a command that expects a body refuses a 204).
// The one place the generated types are read by field name; TestAnswerOf
// holds it to them.
func answerOf[R any](r *R) (resp *http.Response, body []byte, ok bool) {
	v := reflect.ValueOf(r).Elem()
	body, _ = v.FieldByName("Body").Interface().([]byte)
	resp, _ = v.FieldByName("HTTPResponse").Interface().(*http.Response)
	switch {
	case resp == nil || resp.StatusCode < 200 || resp.StatusCode > 299:
		return resp, body, false
	case resp.StatusCode == http.StatusNoContent:
		for _, f := range reflect.VisibleFields(v.Type()) {
			if strings.HasPrefix(f.Name, "JSON2") {
				return resp, body, false
			}
		}
		return resp, body, true
	}
	f := v.FieldByName(fmt.Sprintf("JSON%d", resp.StatusCode))
	return resp, body, f.IsValid() && f.Kind() == reflect.Pointer && !f.IsNil()
}

// parseID is parse for a command whose first argument is a number from 1
// to limit, named name (an id): the number, and every argument.
func (c *cmd) parseID(name string, limit int64) (id int64, pos []string, code int, ok bool) {
	if pos, code, ok = c.parse(); !ok {
		return 0, nil, code, false
	}
	if id, code, ok = c.number(name, pos[0], limit); !ok {
		return 0, nil, code, false
	}
	return id, pos, exitOK, true
}

// parseChannel is parse for TYPE ID [...]: the TYPE (1–255), and every
// argument.
func (c *cmd) parseChannel() (typ int, pos []string, code int, ok bool) {
	n, pos, code, ok := c.parseID("TYPE", 255)
	return int(n), pos, code, ok
}
