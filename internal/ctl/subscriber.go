package ctl

import (
	"github.com/slotmeta/slotmeta/client"
)

// subscriber list TYPE ID: GET /v1/channels/{type}/{id}/subscribers, page
// after page until the listing is done (--timeout bounds them all). With -o
// json the pages are one ChannelMemberPage holding every member.
func subscriberList(c *cmd) int {
	cons := c.consistency()
	page := c.fs.Int("page-size", 1000, "members asked per request (1–1000)")
	typ, pos, code, ok := c.parseChannel()
	if !ok {
		return code
	}
	if *page < 1 || *page > 1000 {
		return c.usageError("--page-size takes 1 to 1000")
	}
	all := client.ChannelMemberPage{Items: []client.ChannelMember{}}
	params := client.ListChannelSubscribersParams{Limit: page, Consistency: (*client.ListChannelSubscribersParamsConsistency)(cons)}
	for {
		r, err := c.api.ListChannelSubscribersWithResponse(c.ctx, typ, pos[1], &params)
		if _, code, ok := answered(c, r, err); !ok {
			return code
		}
		all.Items = append(all.Items, r.JSON200.Items...)
		next := r.JSON200.NextCursor
		if next == nil || *next == "" {
			break
		}
		params.Cursor = next
	}
	return c.showValue(all, func(t *table) {
		t.header("UID", "ADDED")
		for _, m := range all.Items {
			t.row(m.Uid, ms(m.AddedAtMs))
		}
	})
}

// subscriber add TYPE ID UID...: POST /v1/channels/{type}/{id}/subscribers.
func subscriberAdd(c *cmd) int {
	typ, pos, code, ok := c.parseChannel()
	if !ok {
		return code
	}
	r, err := c.api.AddChannelSubscribersWithResponse(c.ctx, typ, pos[1], &client.AddChannelSubscribersParams{},
		client.ChannelMembersRequest{Uids: pos[2:]}, c.idempotent)
	return reply(c, r, err, func(t *table) {
		t.header("ADDED", "SUBSCRIBERS")
		t.row(r.JSON200.Added, r.JSON200.Count)
	})
}

// subscriber remove TYPE ID UID...: POST /v1/channels/{type}/{id}/subscribers/remove.
func subscriberRemove(c *cmd) int {
	typ, pos, code, ok := c.parseChannel()
	if !ok {
		return code
	}
	r, err := c.api.RemoveChannelSubscribersWithResponse(c.ctx, typ, pos[1], &client.RemoveChannelSubscribersParams{},
		client.ChannelMembersRequest{Uids: pos[2:]}, c.idempotent)
	return reply(c, r, err, func(t *table) {
		t.header("REMOVED", "SUBSCRIBERS")
		t.row(r.JSON200.Removed, r.JSON200.Count)
	})
}
