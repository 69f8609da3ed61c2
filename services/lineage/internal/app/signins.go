package app

import (
	"context"
	"fmt"
	"time"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
)

// SignInRepository keeps the console's sign-ins, keyed by their cookie's
// SHA-256.
type SignInRepository interface {
	// StartSignIn deletes the sign-ins last seen before expiredBefore, ends
	// the ones idle longest until fewer than max remain, and records the
	// new one as seen at now, all at once (concurrent starts included);
	// ErrAlreadyExists when digest is taken.
	StartSignIn(ctx context.Context, digest []byte, csrf string, now, expiredBefore time.Time, max int) error
	// GetSignIn returns the CSRF token of digest's sign-in if it was last
	// seen at or after expiredBefore (else ErrNotFound) and, with touch,
	// marks it seen at now when it was last marked before touchBefore.
	GetSignIn(ctx context.Context, digest []byte, now, expiredBefore, touchBefore time.Time, touch bool) (csrf string, err error)
	// EndSignIn deletes digest's sign-in, if any.
	EndSignIn(ctx context.Context, digest []byte) error
	// AttemptSignIn deletes every attempt made at or before since, then counts
	// an attempt by address at now unless address already has max,
	// serialised with the address's other attempts. It returns address's
	// attempts since then, oldest first, the new one included when counted.
	AttemptSignIn(ctx context.Context, address string, now, since time.Time, max int) (attempts []time.Time, counted bool, err error)
	// ClearSignInAttempts forgets address's attempts.
	ClearSignInAttempts(ctx context.Context, address string) error
}

// ConsoleSignIns are the console's sign-ins: start, look up, end.
type ConsoleSignIns struct {
	repo  SignInRepository
	clock clock.Clock
	max   int
}

// NewConsoleSignIns returns the use cases over repo, bounded to
// domain.MaxSignIns.
func NewConsoleSignIns(repo SignInRepository, clk clock.Clock) ConsoleSignIns {
	return ConsoleSignIns{repo: repo, clock: clk, max: domain.MaxSignIns}
}

// Start records a sign-in and returns how long it lasts idle.
func (uc ConsoleSignIns) Start(ctx context.Context, digest []byte, csrf string) (time.Duration, error) {
	if err := domain.ValidateSignIn(digest, csrf); err != nil {
		return 0, err
	}
	now := uc.clock.Now()
	if err := uc.repo.StartSignIn(ctx, digest, csrf, now, domain.SignInExpiredBefore(now), uc.max); err != nil {
		return 0, fmt.Errorf("start a console sign-in: %w", err)
	}
	return domain.SignInIdleTTL, nil
}

// Get returns a live sign-in's CSRF token; touch counts the call as
// activity.
func (uc ConsoleSignIns) Get(ctx context.Context, digest []byte, touch bool) (string, error) {
	if err := domain.ValidateSignInDigest(digest); err != nil {
		return "", err
	}
	now := uc.clock.Now()
	csrf, err := uc.repo.GetSignIn(ctx, digest, now, domain.SignInExpiredBefore(now), now.Add(-domain.SignInTouchEvery), touch)
	if err != nil {
		return "", fmt.Errorf("get a console sign-in: %w", err)
	}
	return csrf, nil
}

// End ends a sign-in for good.
func (uc ConsoleSignIns) End(ctx context.Context, digest []byte) error {
	if err := domain.ValidateSignInDigest(digest); err != nil {
		return err
	}
	if err := uc.repo.EndSignIn(ctx, digest); err != nil {
		return fmt.Errorf("end a console sign-in: %w", err)
	}
	return nil
}

// Attempt counts a password attempt by address and returns 0, or returns
// how long address must wait, having counted nothing (LN-12).
func (uc ConsoleSignIns) Attempt(ctx context.Context, address string) (time.Duration, error) {
	if err := domain.ValidateSignInAddress(address); err != nil {
		return 0, err
	}
	now := uc.clock.Now()
	attempts, counted, err := uc.repo.AttemptSignIn(ctx, address, now, domain.SignInAttemptsSince(now), domain.MaxSignInAttempts)
	if err != nil {
		return 0, fmt.Errorf("count a console sign-in attempt: %w", err)
	}
	if counted {
		return 0, nil
	}
	return domain.SignInRetryAfter(attempts, now), nil
}

// ClearAttempts forgets address's attempts: its password was right.
func (uc ConsoleSignIns) ClearAttempts(ctx context.Context, address string) error {
	if err := domain.ValidateSignInAddress(address); err != nil {
		return err
	}
	if err := uc.repo.ClearSignInAttempts(ctx, address); err != nil {
		return fmt.Errorf("clear console sign-in attempts: %w", err)
	}
	return nil
}
