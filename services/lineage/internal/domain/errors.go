package domain

import (
	"errors"
	"fmt"
)

// ErrNotFound means the thing asked for does not exist in lineage.
var ErrNotFound = errors.New("not found")

// SessionNotKnown is the ErrNotFound for a session lineage holds no node
// for. "Yet", because nodes arrive by events and may trail lifecycle.
func SessionNotKnown(id int64) error {
	return &notFoundError{msg: fmt.Sprintf("session %d is not known to lineage yet", id)}
}

// notFoundError is ErrNotFound with a message fit to show the caller.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Unwrap() error { return ErrNotFound }
