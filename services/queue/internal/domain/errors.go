package domain

import "errors"

// Errors the queue's store returns and its adapters map (grpcapi: NotFound
// and FailedPrecondition); they are the domain's so that no adapter needs
// another adapter's package to recognise them.
var (
	// ErrSealed: the session's queue is sealed by an archive and accepts
	// nothing new.
	ErrSealed = errors.New("the session is being archived or is archived; its queue accepts no messages")
	// ErrArchiveInProgress: another archive attempt of the session holds
	// its queue's seal.
	ErrArchiveInProgress = errors.New("another archive of this session is in progress; retry once it has ended")
	// ErrNotFound: no such message in the session's queue.
	ErrNotFound = errors.New("no such enqueued message")
	// ErrNotPending: the message has been claimed, sent or retired, and can
	// no longer be edited, moved or deleted.
	ErrNotPending = errors.New("the message is no longer pending")
)
