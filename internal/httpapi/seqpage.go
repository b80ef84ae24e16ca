package httpapi

// The logs the controller keeps by sequence number — the decision log and
// the audit trail — page as every newest-first listing of numbered rows
// does (limit, cursor, next_cursor: seqCursor, migrations.go).
const (
	tagDecisions = 'D'
	tagAudit     = 'a'
)

// newestFirst pages a log kept oldest first: at most limit items, newest
// first, of those numbered below before (0: from the newest), and the
// sequence number the next page continues below (0: none left). Items
// numbered 0 (recorded before the log was numbered) are the oldest: they
// are listed once reached, and end the listing.
func newestFirst[T any](log []T, seq func(T) uint64, before uint64, limit int) (page []T, next uint64) {
	page = make([]T, 0, min(len(log), limit))
	i := len(log) - 1
	for ; i >= 0 && len(page) < limit; i-- {
		if s := seq(log[i]); before != 0 && s != 0 && s >= before {
			continue
		}
		page = append(page, log[i])
	}
	if n := len(page); n > 0 && i >= 0 && seq(page[n-1]) > 1 {
		next = seq(page[n-1])
	}
	return page, next
}
