package slotstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

func TestHashSlotOfStringMatchesBytes(t *testing.T) {
	keys := []string{"", "a", "user-1", "channel:42", strings.Repeat("x", 1000), "用户-1", "\x00\xff"}
	for i := range 1000 {
		keys = append(keys, fmt.Sprintf("k-%d", i))
	}
	for _, k := range keys {
		if a, b := slotstore.HashSlotOfString(k), slotstore.HashSlotOf([]byte(k)); a != b {
			t.Fatalf("HashSlotOfString(%q) = %d, HashSlotOf = %d", k, a, b)
		}
	}
	if got := slotstore.HashSlotOf([]byte("user-1")); got != 20 { // CRC32-IEEE 0x7E264614 % 256
		t.Fatalf("HashSlotOf(user-1) = %d, want 20", got)
	}
}

// HashSlotOfString is documented as allocation-free; it sits on the request
// path of every keyed call.
func TestHashSlotOfStringDoesNotAllocate(t *testing.T) {
	key := strings.Repeat("user-0123456789-", 8)
	var sink slotstore.HashSlot
	if n := testing.AllocsPerRun(200, func() { sink += slotstore.HashSlotOfString(key) }); n != 0 {
		t.Fatalf("HashSlotOfString allocates %v times per call, want 0", n)
	}
	_ = sink
}

func TestHashSlotValidAndString(t *testing.T) {
	for _, tc := range []struct {
		s     slotstore.HashSlot
		valid bool
	}{{0, true}, {255, true}, {256, false}, {0xFFFF, false}} {
		if tc.s.Valid() != tc.valid {
			t.Errorf("HashSlot(%d).Valid() = %v", tc.s, !tc.valid)
		}
	}
	if got := slotstore.HashSlot(7).String(); got != "hs7" {
		t.Errorf("HashSlot(7).String() = %q", got)
	}
	if got := slotstore.GroupID(3).String(); got != "g3" {
		t.Errorf("GroupID(3).String() = %q", got)
	}
}

func TestErrorCode(t *testing.T) {
	cause := io.ErrUnexpectedEOF
	for _, tc := range []struct {
		name string
		err  error
		want slotstore.Code
	}{
		{"nil", nil, ""},
		{"plain", errors.New("boom"), slotstore.CodeInternal},
		{"error", slotstore.Errorf(slotstore.CodeNotFound, "user %q", "u1"), slotstore.CodeNotFound},
		{"wrapped twice", fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", slotstore.ErrRouteNotReady)), slotstore.CodeRouteNotReady},
		{"wrap of cause", slotstore.Wrap(slotstore.CodeBusy, cause, "raft"), slotstore.CodeBusy},
		{"deadline", context.DeadlineExceeded, slotstore.CodeTimeout},
		{"wrapped deadline", fmt.Errorf("propose: %w", context.DeadlineExceeded), slotstore.CodeTimeout},
		{"canceled", context.Canceled, slotstore.CodeTimeout},
		// The first *Error in the chain wins, even around a deadline.
		{"error around deadline", slotstore.Wrap(slotstore.CodeQueueFull, context.DeadlineExceeded, ""), slotstore.CodeQueueFull},
	} {
		if got := slotstore.ErrorCode(tc.err); got != tc.want {
			t.Errorf("%s: ErrorCode = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestErrorIsAndUnwrap(t *testing.T) {
	e := slotstore.Errorf(slotstore.CodeNotFound, "user %q not found", "u1")
	if !errors.Is(e, slotstore.ErrNotFound) {
		t.Error("Errorf(not_found) does not match ErrNotFound")
	}
	if errors.Is(e, slotstore.ErrConflict) {
		t.Error("not_found matched ErrConflict")
	}
	if !errors.Is(fmt.Errorf("ctx: %w", e), slotstore.ErrNotFound) {
		t.Error("wrapped not_found does not match ErrNotFound")
	}
	// A target with a message is not a code-only sentinel.
	if errors.Is(e, slotstore.Errorf(slotstore.CodeNotFound, "other")) {
		t.Error("matched a target with a different message")
	}
	w := slotstore.Wrap(slotstore.CodeInternal, io.ErrUnexpectedEOF, "decode")
	if !errors.Is(w, io.ErrUnexpectedEOF) {
		t.Error("Wrap does not unwrap to its cause")
	}
	if got := w.Error(); got != "internal: decode: unexpected EOF" {
		t.Errorf("Wrap(...).Error() = %q", got)
	}
	if got := slotstore.Wrap(slotstore.CodeBusy, io.EOF, "").Error(); got != "busy: EOF" {
		t.Errorf("Wrap without message: %q", got)
	}
	if got := e.Error(); got != `not_found: user "u1" not found` {
		t.Errorf("Errorf(...).Error() = %q", got)
	}
}

func TestAsError(t *testing.T) {
	e := slotstore.Errorf(slotstore.CodeConflict, "exists")
	if got := slotstore.AsError(fmt.Errorf("x: %w", e)); got != e {
		t.Errorf("AsError did not return the *Error in the chain: %v", got)
	}
	plain := errors.New("disk on fire")
	got := slotstore.AsError(plain)
	if got.Code != slotstore.CodeInternal || !errors.Is(got, plain) {
		t.Errorf("AsError(plain) = %+v", got)
	}
	if got := slotstore.AsError(context.DeadlineExceeded); got.Code != slotstore.CodeTimeout {
		t.Errorf("AsError(deadline).Code = %q", got.Code)
	}
}

func TestRetryable(t *testing.T) {
	retryable := map[slotstore.Code]bool{
		slotstore.CodeQueueFull: true, slotstore.CodeRouteNotReady: true, slotstore.CodeNotLeader: true,
		slotstore.CodeBusy: true, slotstore.CodeSlotMigrating: true, slotstore.CodeTimeout: true,
		slotstore.CodeWrongGroup: true,
	}
	for _, c := range []slotstore.Code{
		slotstore.CodeInvalidArgument, slotstore.CodeUnauthenticated, slotstore.CodePermissionDenied,
		slotstore.CodeNotFound, slotstore.CodeConflict, slotstore.CodeEpochStale,
		slotstore.CodeRouteRevisionMismatch, slotstore.CodeFailedPrecondition, slotstore.CodePayloadTooLarge,
		slotstore.CodeQueueFull, slotstore.CodeRouteNotReady, slotstore.CodeNotLeader, slotstore.CodeBusy,
		slotstore.CodeSlotMigrating, slotstore.CodeTimeout, slotstore.CodeWrongGroup, slotstore.CodeInternal,
	} {
		if c.Retryable() != retryable[c] {
			t.Errorf("%s.Retryable() = %v, want %v", c, c.Retryable(), retryable[c])
		}
	}
}
