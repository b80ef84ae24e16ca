package slotstore

// AuditOutcome is what became of an admin action.
type AuditOutcome string

// Audit outcomes.
const (
	AuditOK      AuditOutcome = "ok"      // done or started (a task was created)
	AuditRefused AuditOutcome = "refused" // the cluster said no (conflict, precondition, bad input)
	AuditDenied  AuditOutcome = "denied"  // the credentials lacked the role
	AuditFailed  AuditOutcome = "failed"  // it could not be carried out (unavailable, timeout)
)

// Bounds of an audit record's fields (longer values are cut).
const (
	AuditMaxField  = 128
	AuditMaxDetail = 512
)

// AuditRecord is one admin action in the audit trail: who asked (the name
// and role of their token or client certificate), what (the action and its
// target), when, through which node and from where, and the outcome. The
// controller assigns Seq and AtMs when it records it.
type AuditRecord struct {
	Seq    uint64 `json:"seq"`
	AtMs   int64  `json:"at_ms"`
	Who    string `json:"who"`
	Role   string `json:"role"`
	Via    string `json:"via"`    // token, certificate, open
	Source string `json:"source"` // the caller's address
	Node   NodeID `json:"node"`   // the node that served it
	// Action names the operation: the API route ("POST
	// /v1/cluster/groups/{id}/split") or the console's action.
	Action  string       `json:"action"`
	Target  string       `json:"target"` // the request path, or what the console acted on
	Outcome AuditOutcome `json:"outcome"`
	Status  int          `json:"status"`
	Code    Code         `json:"code,omitempty"`
	Detail  string       `json:"detail,omitempty"`
}

// Bounded returns r with every field cut to its bound.
func (r AuditRecord) Bounded() AuditRecord {
	for _, f := range []*string{&r.Who, &r.Role, &r.Via, &r.Source, &r.Action, &r.Target} {
		*f = cut(*f, AuditMaxField)
	}
	r.Outcome = AuditOutcome(cut(string(r.Outcome), AuditMaxField))
	r.Code = Code(cut(string(r.Code), AuditMaxField))
	r.Detail = cut(r.Detail, AuditMaxDetail)
	return r
}

// OutcomeOf classifies an answer's status.
func OutcomeOf(status int) AuditOutcome {
	switch {
	case status < 400:
		return AuditOK
	case status == 401 || status == 403:
		return AuditDenied
	case status >= 500 || status == 429:
		return AuditFailed
	}
	return AuditRefused
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Do not split a UTF-8 sequence.
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
