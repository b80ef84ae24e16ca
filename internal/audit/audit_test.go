package audit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

func TestIsAdminAction(t *testing.T) {
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/v1/cluster/groups/1/leader-transfer", true},
		{"PUT", "/v1/cluster/balancer", true},
		{"DELETE", "/v1/cluster/nodes/3", true},
		{"GET", "/v1/cluster/groups", false},
		{"POST", "/v1/cluster/routes/resolve", false},
		{"POST", "/v1/batch/kv/get", false},
		{"POST", "/v1/channels/1/c1/migrations", true},
		{"GET", "/v1/channels/1/c1/migrations", false},
		{"POST", "/v1/channels/1/c1/migrations/7/advance", true},
		{"POST", "/v1/channels/1/c1/migrations/7/abort", true},
		{"PUT", "/v1/kv/a", false},
	} {
		if got := IsAdminAction(httptest.NewRequest(c.method, c.path, nil)); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.method, c.path, got, c.want)
		}
	}
}

type sink struct {
	got []slotstore.AuditRecord
	err error
}

func (s *sink) Audit(_ context.Context, rec slotstore.AuditRecord) (uint64, error) {
	if s.err != nil {
		return 0, s.err
	}
	s.got = append(s.got, rec)
	return uint64(len(s.got)), nil
}

// TestRecord: the identity fills who, the status the outcome; a record
// that cannot be written is counted and logged with its fields.
func TestRecord(t *testing.T) {
	s := &sink{}
	r := New(s, nil)
	id := auth.Identity{Name: "ops-alice", Role: auth.RoleAdmin, Via: auth.ViaToken}
	r.Record(context.Background(), id, slotstore.AuditRecord{Action: "PUT /v1/cluster/balancer", Status: 409})
	if len(s.got) != 1 || s.got[0].Who != "ops-alice" || s.got[0].Role != "admin" || s.got[0].Outcome != slotstore.AuditRefused {
		t.Fatalf("recorded: %+v", s.got)
	}
	var logs bytes.Buffer
	s.err = errors.New("no controller leader")
	r = New(s, slog.New(slog.NewTextHandler(&logs, nil)))
	r.Record(context.Background(), id, slotstore.AuditRecord{Action: "DELETE /v1/cluster/nodes/{id}", Status: 204})
	if r.Lost() != 1 || !strings.Contains(logs.String(), "ops-alice") || !strings.Contains(logs.String(), "DELETE /v1/cluster/nodes/{id}") {
		t.Fatalf("lost record: %d, log %q", r.Lost(), logs.String())
	}
}
