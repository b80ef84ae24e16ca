package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// tool is one of the node's offline tools (`slotmeta restore`, `slotmeta
// recover-controller`): its own flags, then the node flags of the node
// whose data directory it works on.
type tool struct {
	name, usage   string
	valued, bools []string // its own flags: with a value, and boolean
}

// toolArgs is what a tool was given.
type toolArgs struct {
	values map[string]string // its valued flags
	set    map[string]bool   // its boolean flags given
	node   *options          // the node's flags (parseOptions)
}

// parse reads a tool's arguments: -h prints its usage on stdout (exit 0),
// a bad flag of its own or of the node's is a usage error on stderr (exit
// 2). ok false: Run returns code.
func (t tool) parse(args []string, getenv func(string) string, stdout, stderr io.Writer) (a toolArgs, code int, ok bool) {
	values, set, rest, help, err := toolFlags(t.name, args, t.valued, t.bools)
	switch {
	case help:
		fmt.Fprint(stdout, t.usage)
		return a, 0, false
	case err != nil:
		fmt.Fprintln(stderr, err)
		return a, 2, false
	}
	o, err := parseOptions(rest, getenv)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "slotmeta %s: %v\n", t.name, err)
		}
		return a, 2, false
	}
	return toolArgs{values: values, set: set, node: o}, 0, true
}

// toolFlags splits a tool's own flags (`slotmeta restore`, `slotmeta
// recover-controller`) from the node flags it passes on: values holds the
// valued flags named in valued, set the boolean ones named in bools; rest
// keeps everything else, in order. help says -h or --help was given.
func toolFlags(tool string, args []string, valued, bools []string) (values map[string]string, set map[string]bool, rest []string, help bool, err error) {
	values, set = map[string]string{}, map[string]bool{}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		switch {
		case !strings.HasPrefix(args[i], "-"):
			rest = append(rest, args[i])
		case name == "h" || name == "help":
			return nil, nil, nil, true, nil
		case slices.Contains(bools, name):
			if hasValue && value != "true" {
				return nil, nil, nil, false, fmt.Errorf("slotmeta %s: --%s takes no value", tool, name)
			}
			set[name] = true
		case slices.Contains(valued, name):
			if !hasValue {
				if i+1 == len(args) {
					return nil, nil, nil, false, fmt.Errorf("slotmeta %s: --%s needs a value", tool, name)
				}
				i++
				value = args[i]
			}
			values[name] = value
		default:
			rest = append(rest, args[i])
		}
	}
	return values, set, rest, false, nil
}
