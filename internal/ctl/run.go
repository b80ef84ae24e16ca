package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// noun is a family of commands: kv, user, node, …
type noun struct {
	name  string
	verbs []verb
}

// verb is one command: `slotmeta ctl <noun> <verb> <args> [flags]`.
type verb struct {
	name     string
	args     string // the positionals' synopsis
	min, max int    // how many positionals; max -1: any number
	write    bool   // changes something: sends an Idempotency-Key
	summary  string
	run      func(c *cmd) int
}

// nouns is the command tree, in the order the usage lists it.
var nouns = []noun{
	{"kv", []verb{
		{"get", "KEY | --prefix P | --from K [--to K]", 0, 1, false, "read a business key, or list the keys with a prefix or in a range", kvGet},
		{"watch", "[KEY | --prefix P]", 0, 1, false, "follow the changes of business keys (of one key, or with a prefix) until interrupted", kvWatch},
		{"put", "KEY VALUE", 2, 2, true, "write a business key (compare-and-set with --if-match or --if-absent)", kvPut},
		{"delete", "KEY", 1, 1, true, "delete a business key (only at a revision with --if-match)", kvDelete},
		{"batch-get", "KEY...", 1, -1, false, "read many keys in one request", kvBatchGet},
		{"batch-write", "[put K V | del K]...", 0, -1, true, "put and delete many keys in one request (ops as args, or JSON from --file/stdin)", kvBatchWrite},
	}},
	{"user", []verb{
		{"get", "UID", 1, 1, false, "read a user", userGet},
		{"put", "UID", 1, 1, true, "create or replace a user", userPut},
		{"delete", "UID", 1, 1, true, "delete a user and everything stored under it", userDelete},
	}},
	{"channel", []verb{
		{"get", "TYPE ID", 2, 2, false, "read a channel", channelGet},
		{"put", "TYPE ID", 2, 2, true, "create or replace a channel", channelPut},
		{"delete", "TYPE ID", 2, 2, true, "delete a channel", channelDelete},
	}},
	{"subscriber", []verb{
		{"list", "TYPE ID", 2, 2, false, "list a channel's subscribers", subscriberList},
		{"add", "TYPE ID UID...", 3, -1, true, "add subscribers to a channel", subscriberAdd},
		{"remove", "TYPE ID UID...", 3, -1, true, "remove subscribers from a channel", subscriberRemove},
	}},
	{"cluster", []verb{
		{"status", "", 0, 0, false, "the answering node's summary of the cluster (exit 5 when it is not ready)", clusterStatus},
	}},
	{"endpoint", []verb{
		{"status", "[--cluster]", 0, 0, false, "each endpoint's own view and replicas, asked of it alone (--cluster: every node)", endpointStatus},
		{"health", "[--cluster]", 0, 0, false, "each endpoint's readiness, asked of it alone (--cluster: every node)", endpointHealth},
	}},
	{"node", []verb{
		{"list", "", 0, 0, false, "the nodes, with their state and health", nodeList},
		{"drain", "ID", 1, 1, true, "move every replica and leader off a node", nodeDrain},
		{"drain-status", "[ID]", 0, 1, false, "the progress of the drains (of one node)", nodeDrainStatus},
		{"remove", "ID", 1, 1, true, "remove a drained node from the cluster for good", nodeRemove},
	}},
	{"balancer", []verb{
		{"status", "", 0, 0, false, "the balancer: paused or not, its last plan, the operator pins", balancerStatus},
		{"plan", "", 0, 0, false, "what the balancer would do now (nothing done)", balancerPlan},
		{"pause", "", 0, 0, true, "pause the balancer cluster-wide (drains go on)", balancerPause},
		{"resume", "", 0, 0, true, "resume the balancer", balancerResume},
		{"release", "GROUP...", 1, -1, true, "release operator pins: the balancer may move those groups again", balancerRelease},
	}},
	{"group", []verb{
		{"list", "", 0, 0, false, "the slot groups: leader, voters, health", groupList},
		{"get", "ID", 1, 1, false, "one slot group with its replicas", groupGet},
		{"check", "ID", 1, 1, true, "check a group's replicas against each other now (exit 4 when they differ)", groupCheck},
		{"create", "[--peers NODES]", 0, 0, true, "start creating a new, empty group", groupCreate},
		{"split", "ID [--slots SLOTS] [--peers NODES]", 1, 1, true, "start moving hash slots of a group (default: the upper half) into a new group", groupSplit},
		{"merge", "ID --into GROUP", 1, 1, true, "start moving every hash slot of a group into another, then retire it", groupMerge},
		{"retire", "ID", 1, 1, true, "retire an empty group", groupRetire},
		{"recover", "ID --accept-data-loss", 1, 1, true, "rebuild a group that lost its quorum from its best survivor (unsafe; docs/runbook.md)", groupRecover},
	}},
	{"route", []verb{
		{"list", "", 0, 0, false, "the 256 hash slots: group and leader of each", routeList},
		{"resolve", "KEY...", 1, -1, false, "where keys route: hash slot, group, leader", routeResolve},
	}},
	{"leader", []verb{
		{"transfer", "GROUP NODE [--prefer]", 2, 2, true, "move a group's leadership to a node, if it is safe (--prefer: and keep it there)", leaderTransfer},
		{"prefer", "GROUP NODE", 2, 2, true, "make a node the group's preferred leader (the reconciler moves leadership there)", leaderPrefer},
	}},
	{"replica", []verb{
		{"move", "GROUP --from NODE --to NODE", 1, 1, true, "start moving a group's replica from one node to another", replicaMove},
	}},
	{"task", []verb{
		{"list", "", 0, 0, false, "the controller's tasks, newest first", taskList},
		{"get", "ID", 1, 1, false, "one task, phase by phase", taskGet},
		{"cancel", "ID", 1, 1, true, "cancel a task before its old voter is removed", taskCancel},
	}},
	{"backup", []verb{
		{"start", "[--wait]", 0, 0, false, "back the whole cluster up on the first endpoint's node", backupStart},
		{"list", "", 0, 0, false, "that node's backups, newest first", backupList},
		{"get", "ID", 1, 1, false, "one backup and its progress", backupGet},
	}},
	{"audit", []verb{
		{"list", "", 0, 0, false, "the audit trail of admin actions, newest first (also: audit [flags])", auditList},
	}},
}

// session is one invocation of Run.
type session struct {
	ctx            context.Context
	env            func(string) string
	stdout, stderr io.Writer
	g              *globalFlags
	cfg            config
}

// Run runs `slotmeta ctl`; args are the arguments after "ctl", env reads
// the environment. It returns the exit code (see the package doc).
func Run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	s := &session{ctx: ctx, env: env, stdout: stdout, stderr: stderr, g: newGlobalFlags()}
	if err := s.g.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			s.usage(stdout)
			return exitOK
		}
		return s.usageError("slotmeta ctl", err.Error())
	}
	rest := s.g.fs.Args()
	if len(rest) == 0 {
		s.usage(stderr)
		return exitUsage
	}
	if isHelp(rest[0]) {
		s.usage(stdout)
		return exitOK
	}
	if rest[0] == "completion" {
		if len(rest) != 2 {
			return s.usageError("slotmeta ctl completion", "want one shell: bash or zsh")
		}
		if err := completion(stdout, rest[1]); err != nil {
			return s.usageError("slotmeta ctl completion", err.Error())
		}
		return exitOK
	}
	n := findNoun(rest[0])
	if n == nil {
		return s.usageError("slotmeta ctl", fmt.Sprintf("unknown command %q", rest[0]))
	}
	// `slotmeta ctl audit [--limit N]` is audit list: the trail is all there is.
	if n.name == "audit" && (len(rest) == 1 || strings.HasPrefix(rest[1], "-")) {
		rest = append([]string{rest[0], "list"}, rest[1:]...)
	}
	switch {
	case len(rest) == 1:
		s.nounUsage(stderr, n)
		return exitUsage
	case isHelp(rest[1]):
		s.nounUsage(stdout, n)
		return exitOK
	}
	for _, v := range n.verbs {
		if v.name == rest[1] {
			c := &cmd{s: s, noun: n.name, v: v, args: rest[2:], fs: flag.NewFlagSet(n.name+" "+v.name, flag.ContinueOnError)}
			c.fs.SetOutput(discard)
			defer c.close()
			return v.run(c)
		}
	}
	return s.usageError("slotmeta ctl "+n.name, fmt.Sprintf("unknown command %q", rest[1]))
}

func isHelp(s string) bool {
	switch s {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

func findNoun(name string) *noun {
	for i := range nouns {
		if nouns[i].name == name {
			return &nouns[i]
		}
	}
	return nil
}

// usageError reports a bad invocation on one line, and where help is.
func (s *session) usageError(where, msg string) int {
	fmt.Fprintf(s.stderr, "%s: %s\nRun '%s -h' for usage.\n", where, msg, where)
	return exitUsage
}

const exitCodesText = `Exit codes:
  0  success
  1  any other error (no endpoint reachable, invalid argument, internal)
  2  usage error: a bad flag or argument; nothing was sent
  3  not found
  4  failed precondition or conflict (a stale --if-match, --if-absent on an existing key),
     or a group check that found replicas that differ
  5  unavailable: retry (503, 429, a timeout, no leader yet; a node not ready)
  6  unauthenticated or permission denied
`

func (s *session) usage(w io.Writer) {
	fmt.Fprint(w, "usage: slotmeta ctl [global flags] <noun> <verb> [args] [flags]\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, n := range nouns {
		for _, v := range n.verbs {
			fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(n.name+" "+v.name+" "+v.args), v.summary)
		}
	}
	fmt.Fprintf(tw, "  %s\t%s\n", "completion bash|zsh", "a shell completion script (source <(slotmeta ctl completion bash))")
	_ = tw.Flush()
	fmt.Fprint(w, "\n")
	s.globalUsage(w)
	fmt.Fprint(w, "\n"+exitCodesText+"\nRun 'slotmeta ctl <noun> <verb> -h' for the flags of a command.\n")
}

func (s *session) nounUsage(w io.Writer, n *noun) {
	fmt.Fprintf(w, "usage: slotmeta ctl %s <verb> [args] [flags]\n\nCommands:\n", n.name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, v := range n.verbs {
		fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(n.name+" "+v.name+" "+v.args), v.summary)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nRun 'slotmeta ctl %s <verb> -h' for the flags of a command, 'slotmeta ctl -h' for the global flags.\n", n.name)
}

func (s *session) globalUsage(w io.Writer) {
	fmt.Fprint(w, "Global flags (before the noun or after the verb's arguments; each with an env fallback, the flag wins):\n")
	s.g.fs.SetOutput(w)
	s.g.fs.PrintDefaults()
	s.g.fs.SetOutput(discard)
}

var discard = io.Discard
