package domain

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound means the addressed session does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists means a unique property (a slug) is taken.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict means the session kept changing under a request; retrying
	// it is safe.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable means a service the request needs did not answer;
	// retrying it is safe.
	ErrUnavailable = errors.New("unavailable")
)

// NotFoundError says which session could not be found, and what to do about
// it in the domain's words. Naming the route that lists sessions is for the
// surface that has routes (the gateway), not for the domain.
type NotFoundError struct{ Ref SessionRef }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("session %s not found; check the id or slug (listing sessions shows both)", e.Ref)
}

func (e *NotFoundError) Unwrap() error { return ErrNotFound }
