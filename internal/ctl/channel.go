package ctl

import (
	"strings"

	"github.com/slotmeta/slotmeta/client"
)

// channel get TYPE ID: GET /v1/channels/{type}/{id}.
func channelGet(c *cmd) int {
	cons := c.consistency()
	typ, pos, code, ok := c.parseChannel()
	if !ok {
		return code
	}
	r, err := c.api.GetChannelWithResponse(c.ctx, typ, pos[1], &client.GetChannelParams{Consistency: (*client.GetChannelParamsConsistency)(cons)})
	return reply(c, r, err, func(t *table) { channelTable(t, r.JSON200) })
}

func channelTable(t *table, ch *client.Channel) {
	var flags []string
	for _, f := range []struct {
		on   bool
		name string
	}{{ch.Ban, "ban"}, {ch.Disband, "disband"}, {ch.SendBan, "send_ban"}, {ch.AllowStranger, "allow_stranger"}, {ch.Large, "large"}} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	t.header("TYPE", "ID", "FLAGS", "SUBSCRIBERS", "DENYLIST", "ALLOWLIST", "UPDATED", "REVISION")
	t.row(ch.ChannelType, ch.ChannelId, strings.Join(flags, ","), ch.SubscriberCount, ch.DenylistCount, ch.AllowlistCount,
		ms(ch.UpdatedAtMs), ch.Revision)
}

// channel put TYPE ID [--ban] [--disband] [--send-ban] [--allow-stranger]
// [--large] [--extra JSON]: PUT /v1/channels/{type}/{id}. It replaces the
// channel's flags and extra (one not given is off, or null); its lists
// (subscribers, denylist, allowlist) stay.
func channelPut(c *cmd) int {
	ban := c.fs.Bool("ban", false, "the channel is banned")
	disband := c.fs.Bool("disband", false, "the channel is disbanded")
	sendBan := c.fs.Bool("send-ban", false, "nobody may send to the channel")
	stranger := c.fs.Bool("allow-stranger", false, "non-subscribers may send")
	large := c.fs.Bool("large", false, "a large channel")
	extra := c.extra()
	typ, pos, code, ok := c.parseChannel()
	if !ok {
		return code
	}
	body := client.ChannelUpsert{Ban: ban, Disband: disband, SendBan: sendBan, AllowStranger: stranger, Large: large, Extra: extraOf(extra)}
	r, err := c.api.PutChannelWithResponse(c.ctx, typ, pos[1], &client.PutChannelParams{}, body, c.idempotent)
	return reply(c, r, err, func(t *table) { channelTable(t, r.JSON200) })
}

// channel delete TYPE ID: DELETE /v1/channels/{type}/{id}.
func channelDelete(c *cmd) int {
	typ, pos, code, ok := c.parseChannel()
	if !ok {
		return code
	}
	r, err := c.api.DeleteChannelWithResponse(c.ctx, typ, pos[1], &client.DeleteChannelParams{}, c.idempotent)
	if _, code, ok := answered(c, r, err); !ok {
		return code
	}
	return c.deleted(map[string]any{"channel_type": typ, "channel_id": pos[1]}, []string{"TYPE", "ID"}, typ, pos[1])
}
