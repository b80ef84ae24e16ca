package fsm

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// The registries: which function applies each command op and answers each
// query kind. The table in init below fills them, family by family, so that
// everything the state machine applies and answers is listed in one place
// (registry_test.go holds it to meta's ops and query kinds).

// appliers maps each op to the function that applies it.
var appliers = map[meta.Op]func(*applier, meta.Command) meta.Result{}

// registerApplier installs the apply function of op (at init; panics on a repeat).
func registerApplier(op meta.Op, f func(*applier, meta.Command) meta.Result) {
	if _, dup := appliers[op]; dup {
		panic(fmt.Sprintf("fsm: applier for op %d registered twice", op))
	}
	appliers[op] = f
}

// registerApplyMethod installs m, an apply method of a resource family's
// type (a small type holding the applier), as the apply function of op; m
// takes op's own command type (meta.DecodeCommand decodes a command by its
// op).
func registerApplyMethod[F ~struct{ *applier }, C meta.Command](op meta.Op, m func(F, C) meta.Result) {
	registerApplier(op, func(a *applier, c meta.Command) meta.Result { return m(F{a}, c.(C)) })
}

// lookups maps each query kind to the function that answers it.
var lookups = map[meta.QueryKind]func(reader, meta.Query) (any, error){}

// registerLookup installs the answer function of query kind k. f takes the
// query's own type and returns the answer type the query declares
// (meta.For), so a lookup answering another type does not compile; the
// answer becomes untyped only here, where dragonboat's Lookup needs it.
func registerLookup[A any, Q meta.For[A]](k meta.QueryKind, f func(reader, Q) (A, error)) {
	if _, dup := lookups[k]; dup {
		panic(fmt.Sprintf("fsm: lookup for query kind %d registered twice", k))
	}
	lookups[k] = func(s reader, q meta.Query) (any, error) {
		typed, ok := q.(Q)
		if !ok {
			return nil, fmt.Errorf("fsm: query kind %d is a %T, not a %T", k, q, typed)
		}
		v, err := f(s, typed)
		if err == nil {
			err = s.stillOwned(q)
		}
		if err != nil {
			return nil, err
		}
		return v, nil
	}
}

func init() {
	registerApplier(meta.OpNoop, func(a *applier, _ meta.Command) meta.Result { return meta.Result{Revision: a.revision} })

	// Users (users.go), their devices (devices.go) and plugin bindings (plugins.go).
	registerApplyMethod(meta.OpCreateUser, userApplier.createUser)
	registerApplyMethod(meta.OpPutUser, userApplier.putUser)
	registerApplyMethod(meta.OpDeleteUser, userApplier.deleteUser)
	registerLookup(meta.QueryGetUser, reader.getUser)
	registerLookup(meta.QueryScanUsers, reader.scanUsers)
	registerApplyMethod(meta.OpPutDevice, deviceApplier.putDevice)
	registerApplyMethod(meta.OpDeleteDevice, deviceApplier.deleteDevice)
	registerLookup(meta.QueryGetDevice, reader.getDevice)
	registerLookup(meta.QueryListDevices, reader.listDevices)
	registerApplyMethod(meta.OpPutPlugin, pluginApplier.putPlugin)
	registerApplyMethod(meta.OpDeletePlugin, pluginApplier.deletePlugin)
	registerLookup(meta.QueryListUserPlugins, reader.listUserPlugins)
	registerLookup(meta.QueryScanPluginUsers, reader.scanPluginUsers)

	// Business keys (kv.go) and system uids (systemuids.go).
	registerApplyMethod(meta.OpPutKV, kvApplier.putKV)
	registerApplyMethod(meta.OpDeleteKV, kvApplier.deleteKV)
	registerApplyMethod(meta.OpWriteKVs, kvApplier.writeKVs)
	registerLookup(meta.QueryGetKV, reader.getKV)
	registerLookup(meta.QueryScanKV, reader.scanKV)
	registerLookup(meta.QueryGetRows, reader.getRows)
	registerApplyMethod(meta.OpAddSystemUID, systemUIDApplier.addSystemUID)
	registerApplyMethod(meta.OpRemoveSystemUID, systemUIDApplier.removeSystemUID)
	registerLookup(meta.QueryScanSystemUIDs, reader.scanSystemUIDs)

	// Channels and their lists (channels.go), the membership projection
	// (outbox.go) and memberships (memberships.go).
	registerApplyMethod(meta.OpCreateChannel, channelApplier.createChannel)
	registerApplyMethod(meta.OpPutChannel, channelApplier.putChannel)
	registerApplyMethod(meta.OpDeleteChannel, channelApplier.deleteChannel)
	registerApplyMethod(meta.OpAddChannelMembers, channelApplier.addChannelMembers)
	registerApplyMethod(meta.OpRemoveChannelMembers, channelApplier.removeChannelMembers)
	registerApplyMethod(meta.OpDeleteChannelMember, channelApplier.deleteChannelMember)
	registerLookup(meta.QueryGetChannel, reader.getChannel)
	registerLookup(meta.QueryScanChannelList, reader.scanChannelList)
	registerLookup(meta.QueryGetChannelMember, reader.getChannelMember)
	registerApplyMethod(meta.OpProjectMembership, membershipApplier.projectMembership)
	registerApplyMethod(meta.OpAckOutbox, channelApplier.ackOutbox)
	registerLookup(meta.QueryScanOutbox, reader.scanOutbox)
	registerApplyMethod(meta.OpPutMembership, membershipApplier.putMembership)
	registerApplyMethod(meta.OpDeleteMembership, membershipApplier.deleteMembership)
	registerApplyMethod(meta.OpReadMembership, membershipApplier.readMembershipTo)
	registerApplyMethod(meta.OpHideMembership, membershipApplier.hideMembership)
	registerApplyMethod(meta.OpActivateMembership, membershipApplier.activateMembership)
	registerLookup(meta.QueryGetMembership, reader.getMembership)
	registerLookup(meta.QueryListMemberships, reader.listMemberships)

	// CMD bindings (cmdbindings.go); a channel's runtime meta (runtime.go),
	// migration tasks (channeltasks.go) and events (events.go).
	registerApplyMethod(meta.OpPutCmdBinding, cmdBindingApplier.putCmdBinding)
	registerApplyMethod(meta.OpDeleteCmdBinding, cmdBindingApplier.deleteCmdBinding)
	registerApplyMethod(meta.OpAckCmdBinding, cmdBindingApplier.ackCmdBinding)
	registerLookup(meta.QueryGetCmdBinding, reader.getCmdBinding)
	registerLookup(meta.QueryListCmdBindings, reader.listCmdBindings)
	registerApplyMethod(meta.OpCreateRuntime, runtimeApplier.createRuntime)
	registerApplyMethod(meta.OpPutRuntime, runtimeApplier.putRuntime)
	registerApplyMethod(meta.OpDeleteRuntime, runtimeApplier.deleteRuntime)
	registerApplyMethod(meta.OpAdvanceRetention, runtimeApplier.advanceRetention)
	registerLookup(meta.QueryGetRuntime, reader.getRuntime)
	registerApplyMethod(meta.OpCreateChannelTask, channelTaskApplier.createChannelTask)
	registerApplyMethod(meta.OpAdvanceChannelTask, channelTaskApplier.advanceChannelTask)
	registerApplyMethod(meta.OpAbortChannelTask, channelTaskApplier.abortChannelTask)
	registerLookup(meta.QueryGetChannelTask, reader.getChannelTask)
	registerLookup(meta.QueryListChannelTasks, reader.listChannelTasks)
	registerApplyMethod(meta.OpAppendEvent, eventApplier.appendEvent)
	registerLookup(meta.QueryListEvents, reader.listEvents)

	// Hash-slot moves: a slot's rows (slotmigration.go) and change log (slotmove.go).
	registerLookup(meta.QueryExportSlot, reader.exportSlot)
	registerLookup(meta.QueryExportChanges, reader.exportChanges)
}
