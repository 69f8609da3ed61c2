package drain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/periodic"
)

// ClaimSweepEvery is how often the expired-claims sweep runs: half a
// claim's default lease (30 s), so a dead holder's message waits at most
// its lease, this, and the drain's delay.
const ClaimSweepEvery = 15 * time.Second

// claimGrace is how long after its lease's end a claim is left to the
// next deliverer of its session before the sweep steps in.
const claimGrace = time.Second

// Claims is the queue store's view of delivery claims.
type Claims interface {
	// ExpiredClaims lists the sessions holding a claim whose lease ended
	// before `before`.
	ExpiredClaims(ctx context.Context, before time.Time) ([]int64, error)
	// ReleaseExpiredClaim puts the session's expired claim's message back
	// in line; false when there was none any more.
	ReleaseExpiredClaim(ctx context.Context, sessionID int64, before time.Time) (bool, error)
}

// Poker pokes a session's drain (Starter.Poke).
type Poker interface {
	Poke(ctx context.Context, sessionID int64) error
}

// ClaimSweep re-arms the drain of every session whose delivery claim
// outlived its holder (QU-20). A pause schedules no drain while the
// session's only message is processing (QU-18): its deliverer settles it.
// A deliverer killed holding the claim settles nothing, and its message
// would wait, back in line only lazily, for the session's next enqueue or
// turn. The sweep pokes the session's drain first, then puts the message
// back in line: the drain waits its delay before it claims, and a crash in
// between leaves the poke, whose claim puts the message back itself.
type ClaimSweep struct {
	Claims Claims
	Drains Poker
	Logger *slog.Logger
}

// Periodic runs the sweep as the schedule <service>-expired-claims every
// ClaimSweepEvery, on the claims whose lease ended more than claimGrace
// before its run.
func (s *ClaimSweep) Periodic() periodic.Sweep {
	return periodic.Sweep{Name: "expired-claims", Window: claimGrace, Every: ClaimSweepEvery,
		Did: "put back in line and drained", Run: s.ReleaseExpired}
}

// ReleaseExpired pokes the drain of, then releases, each claim expired
// before cutoff, and says how many it released. A session whose drain
// cannot be poked keeps its claim until a later run; the error names it.
func (s *ClaimSweep) ReleaseExpired(ctx context.Context, cutoff time.Time) (int64, error) {
	ids, err := s.Claims.ExpiredClaims(ctx, cutoff)
	if err != nil {
		return 0, err
	}
	var (
		released int64
		errs     []error
	)
	for _, id := range ids {
		if err := s.Drains.Poke(ctx, id); err != nil {
			errs = append(errs, err)
			continue
		}
		ok, err := s.Claims.ReleaseExpiredClaim(ctx, id, cutoff)
		if err != nil {
			errs = append(errs, fmt.Errorf("release session %d's expired claim: %w", id, err))
			continue
		}
		if ok {
			released++
			s.Logger.InfoContext(ctx, "a delivery claim outlived its holder: its message is back in line and the drain poked",
				"session_id", id)
		}
	}
	return released, errors.Join(errs...)
}
