package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestContainerImageListensOutsideSecurely (issue 54): the image's
// defaults (deploy/Containerfile's ENV and ENTRYPOINT) put the API on every
// interface of the container; as they are, the node refuses to start and
// says that tokens are needed, and with tokens, a cluster secret and
// --insecure (the trial the file's comment shows) it starts, its API on 0.0.0.0:8080 and the
// exposure named as a warning.
func TestContainerImageListensOutsideSecurely(t *testing.T) {
	cf, err := os.ReadFile("../../deploy/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	var entry []string
	for line := range strings.Lines(string(cf)) {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "ENV "); ok {
			k, val, _ := strings.Cut(v, "=")
			env[k] = val
		}
		if v, ok := strings.CutPrefix(line, "ENTRYPOINT "); ok {
			if err := json.Unmarshal([]byte(v), &entry); err != nil {
				t.Fatalf("ENTRYPOINT: %v", err)
			}
		}
	}
	if len(entry) < 3 || entry[1] != "--data-dir" {
		t.Fatalf("ENTRYPOINT %q: want the binary and --data-dir", entry)
	}
	args := append(entry[1:3:3], "--data-dir", t.TempDir()) // the volume, here
	plan := func(extra map[string]string) (*options, *plan, error) {
		getenv := func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return env[k]
		}
		o, err := parseOptions(args, getenv)
		if err != nil {
			t.Fatal(err)
		}
		p, err := o.plan(getenv)
		return o, p, err
	}

	o, _, err := plan(nil)
	if o.APIAddr != "0.0.0.0:8080" {
		t.Fatalf("the image's API address is %s: not reachable from outside the container", o.APIAddr)
	}
	if err == nil || !strings.Contains(err.Error(), "no API tokens are configured") {
		t.Fatalf("the image's defaults alone: %v; want a refusal that asks for tokens", err)
	}
	o, p, err := plan(map[string]string{"SLOTMETA_TOKENS": "admin:trial-token-0123456789", "SLOTMETA_CLUSTER_SECRET": "trial-secret-0123456789",
		"SLOTMETA_INSECURE": "true"})
	if err != nil {
		t.Fatalf("the trial of the file's comment: %v", err)
	}
	if o.APIAddr != "0.0.0.0:8080" || len(p.sec.warnings) == 0 || !strings.Contains(strings.Join(p.sec.warnings, " "), "plain HTTP") {
		t.Fatalf("the trial: API %s, warnings %q", o.APIAddr, p.sec.warnings)
	}
}
