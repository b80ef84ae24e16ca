package httpapi

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestBodyLimitsFitTheCodec keeps the validate tags within what the codec
// accepts (meta.Max*), so a validated request always encodes.
func TestBodyLimitsFitTheCodec(t *testing.T) {
	for _, c := range []struct {
		typ   any
		field string
		limit int
	}{
		{kvRequest{}, "Value", meta.MaxValueBytes},
		{userRequest{}, "Name", meta.MaxStringBytes},
		{userRequest{}, "Avatar", meta.MaxStringBytes},
		{userRequest{}, "Extra", meta.MaxStringBytes},
	} {
		f, _ := reflect.TypeOf(c.typ).FieldByName(c.field)
		_, n, ok := strings.Cut(f.Tag.Get("validate"), "maxbytes=")
		n, _, _ = strings.Cut(n, ",")
		max, err := strconv.Atoi(n)
		if !ok || err != nil || max > c.limit {
			t.Errorf("%T.%s: maxbytes %q over the codec's %d", c.typ, c.field, n, c.limit)
		}
	}
	if maxUIDBytes > meta.MaxKeyBytes || maxKeyBytes > meta.MaxKeyBytes {
		t.Errorf("key limits over the codec's")
	}
	if meta.MaxValueBytes != 64<<10 {
		t.Errorf("the API promises 64 KiB values; the codec allows %d", meta.MaxValueBytes)
	}
}
