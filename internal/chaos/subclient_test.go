package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/slotmeta/slotmeta/internal/testutil"
)

// subChannels are the channels (type subChannelType) whose subscribers the
// clients change; they are created before the history starts, empty.
var subChannels = []string{"room-a", "room-b"}

const subChannelType = 2

func subPath(channel, rest string) string {
	return fmt.Sprintf("/v1/channels/%d/%s/subscribers%s", subChannelType, channel, rest)
}

// createChannels creates the subscriber channels through node 1, polling
// until each exists (a 409 after an unknown first attempt means it does).
func createChannels(t testing.TB, tc endpoints) {
	for _, ch := range subChannels {
		body := fmt.Sprintf(`{"channel_id":%q,"channel_type":%d}`, ch, subChannelType)
		var a answer
		var next time.Time // not before: the Retry-After of the last answer
		testutil.WaitFor(t, 15*time.Second, 50*time.Millisecond, func() (bool, string) {
			if time.Now().After(next) {
				a = tc.do(tc.url(0), request{method: "POST", path: "/v1/channels", body: body})
				next = time.Now().Add(a.retryAfter())
			}
			return a.code == 201 || a.code == 409, fmt.Sprintf("create channel %s: %d %s", ch, a.code, a.body)
		})
	}
}

// runSubClient changes and reads the subscriber sets until ctx ends.
func (c *client) runSubClient(ctx context.Context) {
	for ctx.Err() == nil {
		c.pause()
		ch := subChannels[c.rng.Intn(len(subChannels))]
		one := uint8(1) << c.rng.Intn(len(subUIDs))
		some := uint8(c.rng.Intn(1<<len(subUIDs)-1) + 1)
		switch p := c.rng.Intn(100); {
		case p < 30:
			c.subList(c.tc.anyURL(c.rng), ch, "sub.list")
		case p < 45:
			c.subHas(ch, one)
		case p < 70:
			c.subChange(subInput{Op: subAdd, Channel: ch, UIDs: some})
		case p < 85:
			c.subChange(subInput{Op: subRemove, Channel: ch, UIDs: some})
		default:
			c.subChange(subInput{Op: subDelete, Channel: ch, UIDs: one})
		}
	}
}

// subChange adds, removes or deletes subscribers and records the change.
func (c *client) subChange(in subInput) {
	uids := maskUIDs(in.UIDs)
	var r request
	switch in.Op {
	case subAdd:
		b, _ := json.Marshal(map[string][]string{"uids": uids})
		r = request{method: "POST", path: subPath(in.Channel, ""), body: string(b)}
	case subRemove:
		b, _ := json.Marshal(map[string][]string{"uids": uids})
		r = request{method: "POST", path: subPath(in.Channel, "/remove"), body: string(b)}
	case subDelete:
		r = request{method: "DELETE", path: subPath(in.Channel, "/"+uids[0])}
	}
	c.maybeIdem(&r)
	w := c.write(r)
	kind := "sub." + subOpNames[in.Op]
	c.rec.count(kind, w.out)
	o := subOutput{Out: w.out}
	switch {
	case w.out == outRefused, w.out == outNotFound && in.Op != subDelete:
		c.rec.fail("%s %s: %d %s", r.method, r.path, w.ans.code, w.ans.body)
		o.Out = outUnknown
	case w.out == outOK && in.Op != subDelete:
		var body struct {
			Added, Removed, Count int
		}
		if err := json.Unmarshal(w.ans.body, &body); err != nil {
			c.rec.fail("%s %s: answer %q", r.method, r.path, w.ans.body)
		}
		o.Changed, o.Count = body.Added+body.Removed, body.Count
	}
	c.rec.addSub(porcupine.Operation{ClientId: c.id, Input: in, Call: w.call, Output: o, Return: w.ret})
}

// subList reads a channel's subscribers through base and records the read.
// It reports whether the read had a definite answer.
func (c *client) subList(base, ch, kind string) (subOutput, bool) {
	call := c.rec.now()
	a := c.do(base, request{method: "GET", path: subPath(ch, "?limit=100")})
	ret := c.rec.now()
	out, unexpected := classify(a.code)
	if out == outUnknown {
		c.backoff = a.retryAfter()
	}
	if unexpected || out != outOK && out != outUnknown {
		c.rec.fail("GET %s: unexpected %d %s", subPath(ch, ""), a.code, a.body)
		return subOutput{}, false
	}
	c.rec.count(kind, out)
	if out == outUnknown {
		return subOutput{}, false
	}
	var page struct {
		Items      []struct{ UID string }
		NextCursor string `json:"next_cursor"`
	}
	if err := json.Unmarshal(a.body, &page); err != nil || page.NextCursor != "" {
		c.rec.fail("GET %s: answer %q", subPath(ch, ""), a.body)
		return subOutput{}, false
	}
	var uids []string
	for _, it := range page.Items {
		uids = append(uids, it.UID)
	}
	o := subOutput{Out: outOK}
	o.Members, o.Foreign = uidMask(uids)
	c.rec.addSub(porcupine.Operation{ClientId: c.id, Input: subInput{Op: subList, Channel: ch}, Call: call, Output: o, Return: ret})
	return o, true
}

// subHas is the membership test of one uid.
func (c *client) subHas(ch string, one uint8) {
	path := subPath(ch, "/"+maskUIDs(one)[0])
	call := c.rec.now()
	a := c.do(c.tc.anyURL(c.rng), request{method: "GET", path: path})
	ret := c.rec.now()
	out, unexpected := classify(a.code)
	if out == outUnknown {
		c.backoff = a.retryAfter()
	}
	if unexpected || out == outRefused {
		c.rec.fail("GET %s: unexpected %d %s", path, a.code, a.body)
		return
	}
	c.rec.count("sub.has", out)
	if out == outUnknown {
		return
	}
	c.rec.addSub(porcupine.Operation{ClientId: c.id, Input: subInput{Op: subHas, Channel: ch, UIDs: one}, Call: call, Output: subOutput{Out: out}, Return: ret})
}

// maskUIDs lists the uids of a mask in subUIDs order.
func maskUIDs(mask uint8) []string {
	var out []string
	for i, u := range subUIDs {
		if mask&(1<<i) != 0 {
			out = append(out, u)
		}
	}
	return out
}
