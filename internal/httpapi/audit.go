package httpapi

import (
	"net/http"
	"strconv"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

type auditJSON struct {
	Items []slotstore.AuditRecord `json:"items"`
	// NextBefore continues the listing (pass it as before); absent at the
	// oldest record kept.
	NextBefore uint64 `json:"next_before,omitempty"`
	// Oldest and Newest are the sequence numbers the trail keeps now.
	Oldest uint64 `json:"oldest"`
	Newest uint64 `json:"newest"`
}

// listAudit is GET /v1/cluster/audit?before=&limit=: the audit trail,
// newest first, as this node's controller replica has applied it.
func (a clusterRoutes) listAudit(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := limitParam(q)
	if err != nil {
		return err
	}
	var before uint64
	if s, ok, err := single(q, "before"); err != nil {
		return err
	} else if ok {
		if before, err = strconv.ParseUint(s, 10, 64); err != nil || before == 0 {
			return invalidField("before", "must be a positive sequence number")
		}
	}
	trail := a.op.AuditTrail()
	out := auditJSON{Items: []slotstore.AuditRecord{}}
	if len(trail) > 0 {
		out.Oldest, out.Newest = trail[0].Seq, trail[len(trail)-1].Seq
	}
	for i := len(trail) - 1; i >= 0 && len(out.Items) < limit; i-- {
		if before != 0 && trail[i].Seq >= before {
			continue
		}
		out.Items = append(out.Items, trail[i])
	}
	if n := len(out.Items); n == limit && out.Items[n-1].Seq > out.Oldest {
		out.NextBefore = out.Items[n-1].Seq
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
