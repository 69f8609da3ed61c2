package app

import (
	"context"

	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// MaxCountPending bounds the sessions one CountPending asks about.
const MaxCountPending = 500

// CountPending counts the pending messages of many sessions at once: the
// console's dashboard cards, one read for a page of them.
type CountPending struct{ Messages Messages }

// Handle counts the pending messages of each session that has any.
func (uc CountPending) Handle(ctx context.Context, sessionIDs []int64) (map[int64]int32, error) {
	if len(sessionIDs) > MaxCountPending {
		return nil, validation.Invalid("session_ids", "ask about at most %d sessions at once (got %d)", MaxCountPending, len(sessionIDs))
	}
	for _, id := range sessionIDs {
		if id < 1 {
			return nil, validation.Invalid("session_ids", "%d is not a session id", id)
		}
	}
	if len(sessionIDs) == 0 {
		return map[int64]int32{}, nil
	}
	return uc.Messages.CountPending(ctx, sessionIDs)
}
