package e2e

import "slotmeta/internal/slotstore"

func hashSlot(key string) slotstore.HashSlot { return slotstore.HashSlotOfString(key) }
