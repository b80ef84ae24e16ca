package ctl

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestCompletionCompletesNounsAndVerbs runs the bash script: nouns after
// ctl, a noun's verbs after it, nothing for another command; zsh's is the
// same behind bashcompinit, and another shell is refused.
func TestCompletionCompletesNounsAndVerbs(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash here")
	}
	var b bytes.Buffer
	if err := completion(&b, "bash"); err != nil {
		t.Fatal(err)
	}
	script := b.String() + `
try() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _slotmeta_ctl; echo "${COMPREPLY[*]}"; }
try slotmeta ctl gr
try slotmeta ctl --endpoints=http://x group ch
try slotmeta ctl balancer ""
try slotmeta ctl completion ""
try slotmeta server ""
`
	out, err := exec.Command(bash, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	want := []string{"group", "check", "status plan pause resume release", "bash zsh", ""}
	if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("completions %q, want %q", got, want)
	}
	b.Reset()
	if err := completion(&b, "zsh"); err != nil || !strings.HasPrefix(b.String(), "autoload -U +X bashcompinit") {
		t.Fatalf("zsh: %v %.60q", err, b.String())
	}
	if err := completion(&b, "fish"); err == nil {
		t.Fatal("a fish script was written")
	}
}
