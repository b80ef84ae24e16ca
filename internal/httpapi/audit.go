package httpapi

import (
	"net/http"
	"strconv"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

type auditJSON struct {
	Items []slotstore.AuditRecord `json:"items"`
	// NextCursor continues the listing (pass it as cursor), as NextBefore
	// does (as before); both absent at the oldest record kept.
	NextCursor string `json:"next_cursor,omitempty"`
	NextBefore uint64 `json:"next_before,omitempty"`
	// Oldest and Newest are the sequence numbers the trail keeps now.
	Oldest uint64 `json:"oldest"`
	Newest uint64 `json:"newest"`
}

// listAudit is GET /v1/cluster/audit?cursor=&limit= (or ?before=, the
// older form): the audit trail,
// newest first, as this node's controller replica has applied it.
func (a clusterRoutes) listAudit(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := limitParam(q)
	if err != nil {
		return err
	}
	cur, _, err := single(q, "cursor")
	if err != nil {
		return err
	}
	before, err := parseSeqCursor(cur, tagAudit)
	if err != nil {
		return err
	}
	if s, ok, err := single(q, "before"); err != nil {
		return err
	} else if ok {
		if before, err = strconv.ParseUint(s, 10, 64); err != nil || before == 0 {
			return invalidField("before", "must be a positive sequence number")
		}
	}
	trail := a.op.AuditTrail()
	out := auditJSON{}
	if len(trail) > 0 {
		out.Oldest, out.Newest = trail[0].Seq, trail[len(trail)-1].Seq
	}
	out.Items, out.NextBefore = newestFirst(trail, func(r slotstore.AuditRecord) uint64 { return r.Seq }, before, limit)
	if out.NextBefore != 0 {
		out.NextCursor = seqCursor(tagAudit, out.NextBefore)
	}
	a.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// getSecurity is GET /v1/cluster/security: how this node is secured.
func (a clusterRoutes) getSecurity(w http.ResponseWriter, r *http.Request) error {
	var st slotstore.SecurityStatus
	if a.security != nil {
		st = a.security()
	} else {
		st.Tokens, st.CertNames = a.auth.Counts()
		st.APITLS = r.TLS != nil
	}
	if st.Warnings == nil {
		st.Warnings = []string{}
	}
	st.AuditLost = a.audit.Lost()
	a.writeJSON(w, r, http.StatusOK, st)
	return nil
}
