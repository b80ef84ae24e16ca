package meta

// OpCheckState asks every replica of a group to compute a digest of its
// state (issue 52). It changes nothing: the state machine commits what the
// entries before it and the rest of its own entry changed, takes a store
// snapshot right there — the same Raft index on every replica — and hands
// it to the node's checker, which hashes the group's rows per hash slot in
// the background. ID names the check: the coordinator asks each replica's
// node for the digest of check ID, and a retried proposal (the same ID at a
// later index) keeps the first.
//
// A replica whose binary predates the op answers it "cannot be applied"
// and writes nothing either, so the op needs no cluster-version gate: the
// check then finds that replica without a digest, never a divergence.
const OpCheckState Op = 112

// CheckState is the check command. It is group-level: its header's hash
// slot is not checked, like the slot commands'.
type CheckState struct {
	Header
	ID uint64
}

func (*CheckState) Op() Op              { return OpCheckState }
func (*CheckState) RouteKey() string    { return "" }
func (c *CheckState) codeBody(k *coder) { k.uvarint(&c.ID) }

func init() { registerCommand[CheckState]() }
