package peer

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/netguard"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Headers of peer RPC.
const (
	hdrSecret    = "X-Slotmeta-Secret"
	hdrTimeoutMs = "X-Slotmeta-Timeout-Ms"
	// HdrConsistency says a forwarded read's consistency ("local"; absent: linearizable).
	HdrConsistency = "X-Slotmeta-Consistency"
	// HdrGroup names the group a forwarded command is for, instead of the
	// one owning its hash slot (hash-slot migration commands).
	HdrGroup = "X-Slotmeta-Group"
	// hdrFrom names the calling node (a claim, not an authentication: the
	// secret and TLS are that), so that a removed node is told so and what
	// a node asks for is attributed to it (OriginOf).
	hdrFrom     = "X-Slotmeta-From-Node"
	maxPeerTime = 60 * time.Second
	// Prefix is the path prefix of every peer endpoint.
	Prefix = "/peer/v1/"
)

// envelope is the JSON error envelope of peer RPC.
type envelope struct {
	Code          slotstore.Code         `json:"code"`
	Message       string                 `json:"message"`
	LeaderHint    slotstore.NodeID       `json:"leader_hint,omitempty"`
	LeaderTerm    uint64                 `json:"leader_term,omitempty"`
	RouteRevision uint64                 `json:"route_revision,omitempty"`
	RetryAfterMs  int64                  `json:"retry_after_ms,omitempty"`
	Details       []slotstore.FieldError `json:"details,omitempty"`
}

// HandlerFunc serves one peer request with a context that ends with the
// caller's time budget.
type HandlerFunc func(ctx context.Context, w http.ResponseWriter, r *http.Request)

// Server routes peer requests after checking the secret and the time
// budget, and bounds how many it serves at once (past the bound: busy).
type Server struct {
	secret *Secret
	// limiter bounds wrong secrets per source address (auth.Limiter); a
	// source past it is refused before its secret is looked at.
	limiter *auth.Limiter
	// authFailed, when set, counts a refused secret (limited: refused
	// unread for the source's earlier failures).
	authFailed func(limited bool)
	slots      chan struct{}
	mux        *http.ServeMux
	// refuse, when set, names callers the cluster removed: their requests
	// are answered permission_denied, unread.
	refuse func(from slotstore.NodeID) bool

	streamDead    time.Duration  // a stream silent this long is closed (deadAfter)
	streamRuns    sync.WaitGroup // streams tracked and not yet ended
	streamsMu     sync.Mutex
	streams       map[*serverStream]struct{} // open peer streams (streamserver.go)
	streamsClosed bool
}

// Wrong secrets a source may send: a burst, then a few a second, then 429
// (a right secret is taken regardless: admit).
const (
	authFailRate  = 5
	authFailBurst = 50
	// MinSecretBytes is the shortest cluster secret a node is given.
	MinSecretBytes = 16
)

// OnAuthFailure makes the server call f for every refused secret (set
// before serving).
func (s *Server) OnAuthFailure(f func(limited bool)) { s.authFailed = f }

// RefuseFrom makes the server refuse requests from the nodes refuse names
// (set before serving).
func (s *Server) RefuseFrom(refuse func(from slotstore.NodeID) bool) { s.refuse = refuse }

// NewServer returns a server that accepts requests carrying secret and
// serves at most bound of them at once.
func NewServer(secret *Secret, bound int) *Server {
	s := &Server{secret: secret, slots: make(chan struct{}, bound), mux: http.NewServeMux(), streamDead: deadAfter,
		limiter: auth.NewLimiter(auth.LimiterConfig{Rate: authFailRate, Burst: authFailBurst})}
	s.mux.HandleFunc(http.MethodGet+" "+Prefix+"stream", s.serveStream)
	return s
}

// Handle registers h for pattern ("METHOD name"; the name is under Prefix).
func (s *Server) Handle(method, name string, h HandlerFunc) {
	s.mux.HandleFunc(method+" "+Prefix+name, s.guard(h))
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// guard checks the secret (in constant time) and the time budget, takes a
// slot, and runs h with a context that ends with the caller's budget and a
// body bounded to one entry.
func (s *Server) guard(h HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		from, ok := s.admit(w, r)
		if !ok {
			return
		}
		ms, err := strconv.ParseInt(r.Header.Get(hdrTimeoutMs), 10, 64)
		if err != nil || ms <= 0 || time.Duration(ms)*time.Millisecond > maxPeerTime {
			WriteError(w, http.StatusBadRequest, slotstore.Errorf(slotstore.CodeInvalidArgument, "peer request needs %s in 1..%d", hdrTimeoutMs, maxPeerTime.Milliseconds()))
			return
		}
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		default:
			WriteError(w, http.StatusServiceUnavailable, &slotstore.Error{Code: slotstore.CodeBusy,
				Message: "node is serving its bound of peer requests", RetryAfter: 100 * time.Millisecond})
			return
		}
		ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), originKey{}, from), time.Duration(ms)*time.Millisecond)
		defer cancel()
		r.Body = http.MaxBytesReader(w, r.Body, meta.MaxEntryBytes)
		h(ctx, w, r)
	}
}

// originKey keys the calling node in a handler's context.
type originKey struct{}

// OriginOf is the node a peer request says it comes from (0: it named
// none). The claim is as good as the cluster secret: any holder of the
// secret may name any node, so it attributes, it does not authenticate.
func OriginOf(ctx context.Context) slotstore.NodeID {
	id, _ := ctx.Value(originKey{}).(slotstore.NodeID)
	return id
}

// admit checks the secret (in constant time) and that the caller was not
// removed; it answers the refusal and reports false if either fails, and
// the node the caller names otherwise.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (slotstore.NodeID, bool) {
	// The right secret is always taken: on loopback every node is one source
	// address, and a local process sending wrong secrets must not lock the
	// nodes out of each other. Only wrong ones spend the source's budget;
	// past it they are answered 429 (and not compared: cheap). Guessing
	// stays hopeless — a generated secret has 256 random bits, a given one
	// at least MinSecretBytes.
	ok, limited := true, false
	var wait time.Duration
	if !s.secret.Accepts(r.Header.Get(hdrSecret)) {
		ok = false
		_, wait, limited = s.limiter.Guard(auth.Source(r), func() bool { return false })
	}
	if !ok {
		if s.authFailed != nil {
			s.authFailed(limited)
		}
		if limited {
			WriteError(w, http.StatusTooManyRequests, &slotstore.Error{Code: slotstore.CodeRateLimited, RetryAfter: wait,
				Message: "too many wrong cluster secrets from this address; wait"})
			return 0, false
		}
		WriteError(w, http.StatusUnauthorized, &slotstore.Error{Code: slotstore.CodeUnauthenticated, Message: "missing or wrong cluster secret"})
		return 0, false
	}
	from, err := strconv.ParseUint(r.Header.Get(hdrFrom), 10, 64)
	if err != nil {
		from = 0 // names no node
	}
	if from != 0 && s.refuse != nil && s.refuse(slotstore.NodeID(from)) {
		WriteError(w, http.StatusForbidden, slotstore.Errorf(slotstore.CodePermissionDenied, "node %d was removed from the cluster", from))
		return 0, false
	}
	netguard.Prove(r.Context()) // a peer: its connection may idle as long as it likes
	return slotstore.NodeID(from), true
}

// toEnvelope is err as the envelope peer RPC sends.
func toEnvelope(err error) envelope {
	e := slotstore.AsError(err)
	return envelope{Code: e.Code, Message: e.Message, LeaderHint: e.LeaderHint, LeaderTerm: e.LeaderTerm,
		RouteRevision: e.RouteRevision, RetryAfterMs: e.RetryAfter.Milliseconds(), Details: e.Details}
}

// err is the envelope as the error it carries.
func (pe envelope) err() *slotstore.Error {
	return &slotstore.Error{Code: pe.Code, Message: pe.Message, LeaderHint: pe.LeaderHint, LeaderTerm: pe.LeaderTerm,
		RouteRevision: pe.RouteRevision, RetryAfter: time.Duration(pe.RetryAfterMs) * time.Millisecond, Details: pe.Details}
}

// WriteError answers err in the envelope, with status.
func WriteError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(toEnvelope(err))
}

// ReadRequest reads a request's body from body (r.Body, which the server
// bounds, or a tighter io.LimitReader of it) and decodes it. On a failure it
// answers the request — 413, or 400 "undecodable <what>" — and ok is false.
func ReadRequest[T any](w http.ResponseWriter, body io.Reader, what string, decode func([]byte) (T, error)) (v T, raw []byte, ok bool) {
	raw, err := io.ReadAll(body)
	if err != nil {
		WriteError(w, http.StatusRequestEntityTooLarge, slotstore.Wrap(slotstore.CodePayloadTooLarge, err, "peer request body"))
		return v, nil, false
	}
	if v, err = decode(raw); err != nil {
		WriteError(w, http.StatusBadRequest, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "undecodable "+what))
		return v, nil, false
	}
	return v, raw, true
}

// StatusOf is the status a handler answers err with: 503 when retrying may
// help, 409 otherwise.
func StatusOf(err error) int {
	if slotstore.ErrorCode(err).Retryable() {
		return http.StatusServiceUnavailable
	}
	return http.StatusConflict
}

// WriteJSON answers v as JSON.
func WriteJSON[T any](w http.ResponseWriter, v T) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// SetRouteHeaders writes r into h.
func SetRouteHeaders(h http.Header, r slotstore.Route) {
	h.Set("X-Hash-Slot", strconv.FormatUint(uint64(r.HashSlot), 10))
	h.Set("X-Slot-Group", strconv.FormatUint(uint64(r.GroupID), 10))
	h.Set("X-Leader-Node", strconv.FormatUint(uint64(r.LeaderNodeID), 10))
	h.Set("X-Leader-Term", strconv.FormatUint(r.LeaderTerm, 10))
	h.Set("X-Config-Epoch", strconv.FormatUint(r.ConfigEpoch, 10))
	h.Set("X-Route-Revision", strconv.FormatUint(r.RouteRevision, 10))
}

func routeFromHeaders(h http.Header) slotstore.Route {
	u := func(k string) uint64 { v, _ := strconv.ParseUint(h.Get(k), 10, 64); return v }
	return slotstore.Route{HashSlot: slotstore.HashSlot(u("X-Hash-Slot")), GroupID: slotstore.GroupID(u("X-Slot-Group")),
		LeaderNodeID: slotstore.NodeID(u("X-Leader-Node")), LeaderTerm: u("X-Leader-Term"),
		ConfigEpoch: u("X-Config-Epoch"), RouteRevision: u("X-Route-Revision")}
}

// LeaderView is one node's live view of one group it replicates.
type LeaderView struct {
	Group  slotstore.GroupID `json:"group"`
	Leader slotstore.NodeID  `json:"leader"`
	Term   uint64            `json:"term"`
}
