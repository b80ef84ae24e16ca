package ctl

import (
	"fmt"
	"io"
	"strings"
)

// completion writes a completion script for shell (bash or zsh) of the
// command tree: `slotmeta ctl completion bash > /etc/bash_completion.d/slotmeta`,
// or `source <(slotmeta ctl completion zsh)`. It completes nouns after
// `ctl`, and verbs after a noun; words that begin with "-" are passed over,
// so a flag's value is given as --flag=value.
func completion(w io.Writer, shell string) error {
	var cases strings.Builder
	var names []string
	for _, n := range nouns {
		names = append(names, n.name)
		var verbs []string
		for _, v := range n.verbs {
			verbs = append(verbs, v.name)
		}
		fmt.Fprintf(&cases, "    %s) words=%q ;;\n", n.name, strings.Join(verbs, " "))
	}
	cases.WriteString("    completion) words=\"bash zsh\" ;;\n")
	script := fmt.Sprintf(`_slotmeta_ctl() {
  local cur=${COMP_WORDS[COMP_CWORD]} i seen=0 noun="" words=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
    -*) ;;
    *) seen=$((seen + 1)); [ $seen -eq 2 ] && noun=${COMP_WORDS[i]} ;;
    esac
  done
  [ "${COMP_WORDS[1]}" = ctl ] || return 0
  case $seen in
  1) words=%q ;;
  2)
    case $noun in
%s    esac ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _slotmeta_ctl slotmeta
`, strings.Join(names, " ")+" completion", cases.String())
	switch shell {
	case "bash":
	case "zsh":
		script = "autoload -U +X bashcompinit && bashcompinit\n" + script
	default:
		return fmt.Errorf("completion: want bash or zsh, not %q", shell)
	}
	_, err := io.WriteString(w, script)
	return err
}
