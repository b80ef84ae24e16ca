package ctl

import "github.com/slotmeta/slotmeta/client"

// user get UID: GET /v1/users/{uid}.
func userGet(c *cmd) int {
	cons := c.consistency()
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	r, err := c.api.GetUserWithResponse(c.ctx, pos[0], &client.GetUserParams{Consistency: (*client.GetUserParamsConsistency)(cons)})
	return reply(c, r, err, func(t *table) { userTable(t, r.JSON200) })
}

func userTable(t *table, u *client.User) {
	t.header("UID", "NAME", "AVATAR", "CREATED", "UPDATED", "REVISION")
	t.row(u.Uid, u.Name, u.Avatar, ms(u.CreatedAtMs), ms(u.UpdatedAtMs), u.Revision)
}

// user put UID [--name N] [--avatar A] [--extra JSON]: PUT /v1/users/{uid}.
// It replaces the user (a field not given is emptied); the creation time
// of an existing user is kept.
func userPut(c *cmd) int {
	name := c.fs.String("name", "", "the user's `name` (up to 1024 bytes)")
	avatar := c.fs.String("avatar", "", "the user's avatar, typically a `URL` (up to 2048 bytes)")
	extra := c.extra()
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	body := client.UserUpsert{Name: name, Avatar: avatar, Extra: extraOf(extra)}
	r, err := c.api.PutUserWithResponse(c.ctx, pos[0], &client.PutUserParams{}, body, c.idempotent)
	return reply(c, r, err, func(t *table) { userTable(t, r.JSON200) })
}

// user delete UID: DELETE /v1/users/{uid}, and everything stored under it.
func userDelete(c *cmd) int {
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	r, err := c.api.DeleteUserWithResponse(c.ctx, pos[0], &client.DeleteUserParams{}, c.idempotent)
	if _, code, ok := answered(c, r, err); !ok {
		return code
	}
	return c.deleted(map[string]any{"uid": pos[0]}, []string{"UID"}, pos[0])
}
