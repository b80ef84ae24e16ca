package console

import (
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// auditPages serves the audit trail (admin only), newest first.
type auditPages struct{ *console }

func (c auditPages) auditTrail() AuditProps {
	trail := c.src.AuditTrail()
	out := make([]slotstore.AuditRecord, 0, min(len(trail), 200))
	for i := len(trail) - 1; i >= 0 && len(out) < 200; i-- {
		out = append(out, trail[i])
	}
	return AuditProps{Records: out, Now: c.now()}
}

func (c auditPages) auditPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Audit trail", "audit", AuditBody(c.auditTrail()))
}

func (c auditPages) auditFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, AuditTable(c.auditTrail()))
}
