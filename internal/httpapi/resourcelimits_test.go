package httpapi

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestResourceBodyLimitsFitTheCodec keeps the validate tags of the device,
// plugin, channel and channel-list requests within what the codec accepts,
// so a validated request always encodes and decodes.
func TestResourceBodyLimitsFitTheCodec(t *testing.T) {
	tagValue := func(typ any, field, key string) int {
		f, ok := reflect.TypeOf(typ).FieldByName(field)
		if !ok {
			t.Fatalf("%T has no field %s", typ, field)
		}
		for _, part := range strings.Split(f.Tag.Get("validate"), ",") {
			if v, ok := strings.CutPrefix(part, key+"="); ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("%T.%s: %s", typ, field, part)
				}
				return n
			}
		}
		t.Fatalf("%T.%s has no %s", typ, field, key)
		return 0
	}
	for _, c := range []struct {
		typ        any
		field, key string
		limit      int
	}{
		{deviceRequest{}, "Token", "maxbytes", meta.MaxDeviceTokenBytes},
		{deviceRequest{}, "DeviceLevel", "max", 255},
		{pluginRequest{}, "Config", "maxbytes", meta.MaxPluginConfigBytes},
		{channelRequest{}, "Extra", "maxbytes", meta.MaxStringBytes},
		{channelRequest{}, "ChannelType", "max", 255},
		{channelFlagsJSON{}, "Extra", "maxbytes", meta.MaxStringBytes},
		{membersRequest{}, "UIDs", "max", meta.MaxListUIDs},
	} {
		if n := tagValue(c.typ, c.field, c.key); n > c.limit {
			t.Errorf("%T.%s: %s=%d over the codec's %d", c.typ, c.field, c.key, n, c.limit)
		}
	}
	if meta.MaxPluginNoBytes != 64 || meta.MaxDeviceTokenBytes != 1<<10 || meta.MaxPluginConfigBytes != 16<<10 {
		t.Error("the API promises plugin numbers of 64 bytes, tokens of 1 KiB and configs of 16 KiB")
	}
}
