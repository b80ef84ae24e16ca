package ctl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/client/routed"
)

// cmd is one command being run: its flags, and once parsed the client and
// the context every call of it takes.
type cmd struct {
	s    *session
	noun string
	v    verb
	args []string
	fs   *flag.FlagSet // the command's own flags; the global ones are added to parse

	idemKey string // writes: the Idempotency-Key of every request of this invocation
	api     *client.ClientWithResponses
	rc      *routed.Client // api's: closed with the command
	ctx     context.Context
	cancel  context.CancelFunc
	// untimed: the command runs until interrupted unless --timeout (or
	// SLOTMETA_TIMEOUT) is given (a watch); set before parse.
	untimed bool
	set     map[string]bool // the flags given on the command line (after parse)
}

func (c *cmd) name() string { return "slotmeta ctl " + c.noun + " " + c.v.name }

func (c *cmd) close() {
	if c.cancel != nil {
		c.cancel()
	}
	if c.rc != nil {
		_ = c.rc.Close()
	}
}

// parse parses the arguments — the command's flags and the global ones may
// come before, between and after the positionals — applies the
// environment, and dials. ok false: Run returns code now (-h: 0, a usage
// error: 2); nothing was sent either way.
func (c *cmd) parse() (pos []string, code int, ok bool) {
	if c.v.write {
		c.fs.StringVar(&c.idemKey, "idempotency-key", "", "the Idempotency-Key of this write (default: a random one): the same key again applies it at most once")
	}
	all := flag.NewFlagSet(c.name(), flag.ContinueOnError)
	all.SetOutput(discard)
	add := func(f *flag.Flag) { all.Var(f.Value, f.Name, f.Usage) }
	c.fs.VisitAll(add)
	c.s.g.fs.VisitAll(add)
	args := c.args
	for {
		if err := all.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.usage(c.s.stdout)
				return nil, exitOK, false
			}
			return nil, c.usageError(err.Error()), false
		}
		rest := all.Args()
		if len(rest) == 0 {
			break
		}
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" { // after "--" everything is positional
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	names := strings.Fields(c.v.args)
	switch {
	case len(pos) < c.v.min:
		missing := "an argument"
		if len(pos) < len(names) {
			missing = strings.Trim(names[len(pos)], "[].")
		}
		return nil, c.usageError("missing " + missing), false
	case c.v.max >= 0 && len(pos) > c.v.max:
		return nil, c.usageError(fmt.Sprintf("unexpected argument %q", pos[c.v.max])), false
	}
	set := map[string]bool{}
	c.s.g.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	all.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c.set = set
	cfg, err := c.s.g.finish(set, c.s.env)
	if err != nil {
		return nil, c.usageError(err.Error()), false
	}
	c.s.cfg = cfg
	if c.v.write {
		if c.idemKey == "" {
			c.idemKey = randomKey()
		} else if err := checkIdempotencyKey(c.idemKey); err != nil {
			return nil, c.usageError(err.Error()), false
		}
	}
	if c.rc, err = dial(cfg); err != nil {
		return nil, c.usageError(err.Error()), false
	}
	c.api = c.rc.API()
	if c.untimed && !set["timeout"] && c.s.env("SLOTMETA_TIMEOUT") == "" {
		c.ctx, c.cancel = context.WithCancel(c.s.ctx) // until interrupted
	} else {
		c.ctx, c.cancel = context.WithTimeout(c.s.ctx, cfg.Timeout)
	}
	return pos, exitOK, true
}

func (c *cmd) usageError(msg string) int {
	return c.s.usageError(c.name(), msg)
}

func (c *cmd) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s %s [flags]\n\n%s.\n", c.name(), c.v.args, strings.ToUpper(c.v.summary[:1])+c.v.summary[1:])
	var own bool
	c.fs.VisitAll(func(*flag.Flag) { own = true })
	if own {
		fmt.Fprint(w, "\nFlags:\n")
		c.fs.SetOutput(w)
		c.fs.PrintDefaults()
		c.fs.SetOutput(discard)
	}
	fmt.Fprint(w, "\n")
	c.s.globalUsage(w)
}

// idempotent is the request editor of every write: the invocation's
// Idempotency-Key, so a write retried with it applies once.
func (c *cmd) idempotent(_ context.Context, req *http.Request) error {
	req.Header.Set("Idempotency-Key", c.idemKey)
	return nil
}

func randomKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "ctl-" + hex.EncodeToString(b)
}

// checkIdempotencyKey holds a given key to the API's rule (1–256 bytes of
// printable ASCII), so a bad one is a usage error, not a 400.
func checkIdempotencyKey(k string) error {
	if len(k) > 256 {
		return errors.New("--idempotency-key: at most 256 bytes")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < ' ' || k[i] > '~' {
			return errors.New("--idempotency-key: printable ASCII only")
		}
	}
	return nil
}

// number parses positional s, named name, as a positive integer no larger
// than limit; ok false: a usage error was reported and code is its exit code.
func (c *cmd) number(name, s string, limit int64) (n int64, code int, ok bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > limit {
		return 0, c.usageError(fmt.Sprintf("%s %q: want a number from 1 to %d", name, s, limit)), false
	}
	return n, exitOK, true
}

// numbers parses list, comma-separated numbers from low to limit (a flag
// named name): nil when list is empty.
func (c *cmd) numbers(name, list string, low, limit int64) (*[]int64, int, bool) {
	if strings.TrimSpace(list) == "" {
		return nil, exitOK, true
	}
	var out []int64
	for _, part := range strings.Split(list, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil || n < low || n > limit || len(out) == 256 {
			return nil, c.usageError(fmt.Sprintf("%s %q: want at most 256 numbers from %d to %d, comma-separated", name, list, low, limit)), false
		}
		out = append(out, n)
	}
	return &out, exitOK, true
}

// consistency is the --consistency flag of reads.
func (c *cmd) consistency() *string {
	v := "linearizable"
	c.fs.Var(&enumValue{p: &v, allowed: []string{"linearizable", "local"}}, "consistency",
		"`linearizable` (through Raft, sees every acknowledged write) or local (the answering replica's state, maybe stale)")
	return &v
}

// jsonFlag is a flag holding a JSON value (--extra), checked as it is
// parsed and sent as it was written (no float64 round trip of its numbers).
type jsonFlag struct{ v *json.RawMessage }

func (j jsonFlag) String() string { return "" }

func (j jsonFlag) Set(s string) error {
	if !json.Valid([]byte(s)) {
		return errors.New("not a JSON value")
	}
	*j.v = json.RawMessage(s)
	return nil
}

// extra is the --extra flag of users and channels.
func (c *cmd) extra() *json.RawMessage {
	var v json.RawMessage
	c.fs.Var(jsonFlag{&v}, "extra", "any JSON `value` stored with it (up to 64 KiB)")
	return &v
}

// extraOf is --extra as the generated types hold it: nil when not given.
func extraOf(v *json.RawMessage) *client.Extra {
	if len(*v) == 0 {
		return nil
	}
	var e client.Extra = *v
	return &e
}
