package main

import (
	"fmt"
	"slices"
	"strings"
)

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
