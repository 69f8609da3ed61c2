package domain

import "time"

// ClearTrashExpiry drops an archived session's trash deadline once nothing
// of it is retained any more — the runner deleted its clean clone, or
// found none — because trash_after is the deadline of what the trash
// holds (session-lifecycle.md, "the job clears the trash deadline rather
// than holding a session in the trash for four days over a clone that does
// not exist"). Only for the archive archivedAt names: a session restored
// or archived again since keeps the deadline of its own archive. It is
// pure; cleared is false when there was nothing to clear.
func ClearTrashExpiry(s Session, archivedAt time.Time) (_ Session, cleared bool) {
	if s.Status != StatusArchived || s.TrashAfter == nil || s.ArchivedAt == nil || !s.ArchivedAt.Equal(archivedAt) {
		return s, false
	}
	s.TrashAfter = nil
	return s, true
}
