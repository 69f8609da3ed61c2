package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Actor is who an input boundary established spoke. Exactly one is set.
// There is no way to name an author directly: the author is resolved here,
// from the actor, never from the message's text or a caller's claim. The
// transport takes the actor only from a boundary it verified
// (platform/boundary), never from a request field.
type Actor struct {
	// WebUIAdmin: the request came through the web UI, which one human —
	// the admin, ZIMMER_ADMIN_USER — reaches.
	WebUIAdmin bool
	// SlackUserID: the Slack user who sent the message.
	SlackUserID string
}

// RecordHumanMessageInput is one message captured at an input boundary.
type RecordHumanMessageInput struct {
	Actor               Actor
	Provenance          domain.Provenance
	AuthoredInSessionID int64
	Content             string
	SlackPermalink      string
	// OccurredAt defaults to now.
	OccurredAt time.Time
	// IdempotencyKey is the boundary's name for this utterance ("": none).
	IdempotencyKey string
}

// RecordOutcome is what RecordHumanMessage did.
type RecordOutcome struct {
	// Recorded is false when the actor resolved to nobody: then nothing is
	// recorded at all, and NotRecordedReason says why.
	Recorded          bool
	Message           domain.HumanMessage
	NotRecordedReason string
	// AlreadyRecorded: the idempotency key named a message recorded
	// before, which Message is; nothing was written now.
	AlreadyRecorded bool
}

// RecordHumanMessage appends a human message, resolving its author from the
// actor. An actor that resolves to nobody records nothing: a wrongly
// attributed record launders automation into authorization.
type RecordHumanMessage struct {
	users    UserRepository
	messages HumanMessageRepository
	admin    string
	clock    clock.Clock
}

// NewRecordHumanMessage returns the use case; adminKey is ZIMMER_ADMIN_USER
// (empty: domain.DefaultAdminUser).
func NewRecordHumanMessage(users UserRepository, messages HumanMessageRepository, adminKey string, clk clock.Clock) RecordHumanMessage {
	return RecordHumanMessage{users: users, messages: messages, admin: adminKey, clock: clk}
}

// Handle records in, or reports why it did not.
func (uc RecordHumanMessage) Handle(ctx context.Context, in RecordHumanMessageInput) (RecordOutcome, error) {
	if _, err := domain.ParseProvenance(string(in.Provenance)); err != nil {
		return RecordOutcome{}, err
	}
	switch {
	case in.Actor.WebUIAdmin == (in.Actor.SlackUserID != ""):
		return RecordOutcome{}, validation.Invalid("actor", "exactly one of the web UI's admin and a Slack user")
	case in.Provenance.WebUI() && !in.Actor.WebUIAdmin:
		return RecordOutcome{}, validation.Invalid("provenance", "%s is authored by the web UI's admin, but the boundary established a Slack user", in.Provenance)
	case in.Provenance.Slack() && in.Actor.SlackUserID == "":
		return RecordOutcome{}, validation.Invalid("provenance", "%s is authored by a Slack user, but the boundary established the web UI's admin", in.Provenance)
	}
	if err := domain.ValidateIdempotencyKey(in.IdempotencyKey); err != nil {
		return RecordOutcome{}, err
	}
	asked := domain.HumanMessage{Provenance: in.Provenance, AuthoredInSessionID: in.AuthoredInSessionID, Content: in.Content}
	// A retry is answered from the first record before the roster is read:
	// whoever the actor resolves to now, the first call decided the author.
	if in.IdempotencyKey != "" {
		first, found, err := uc.messages.HumanMessageByKey(ctx, in.IdempotencyKey)
		if err != nil {
			return RecordOutcome{}, fmt.Errorf("look up human message keyed %q: %w", in.IdempotencyKey, err)
		}
		if found {
			return replayed(asked, first)
		}
	}
	users, err := uc.users.ListUsers(ctx)
	if err != nil {
		return RecordOutcome{}, fmt.Errorf("read the roster: %w", err)
	}
	roster := domain.NewRoster(users)
	var author domain.User
	var ok bool
	if in.Actor.WebUIAdmin {
		if author, ok = roster.Admin(uc.admin); !ok {
			return RecordOutcome{NotRecordedReason: fmt.Sprintf("the admin %q (ZIMMER_ADMIN_USER) is not in the users roster", adminOrDefault(uc.admin))}, nil
		}
	} else if author, ok = roster.BySlackID(in.Actor.SlackUserID); !ok {
		return RecordOutcome{NotRecordedReason: fmt.Sprintf("slack user %s belongs to nobody in the users roster", domain.SanitizeInline(in.Actor.SlackUserID))}, nil
	}
	m := domain.HumanMessage{
		Author:              author.Key,
		Provenance:          in.Provenance,
		AuthoredInSessionID: in.AuthoredInSessionID,
		Content:             in.Content,
		SlackPermalink:      in.SlackPermalink,
		OccurredAt:          in.OccurredAt,
		IdempotencyKey:      in.IdempotencyKey,
	}
	if m.OccurredAt.IsZero() {
		m.OccurredAt = uc.clock.Now()
	}
	if err := m.Validate(); err != nil {
		return RecordOutcome{}, err
	}
	saved, created, err := uc.messages.RecordHumanMessage(ctx, m)
	if err != nil {
		return RecordOutcome{}, fmt.Errorf("record human message in session %d: %w", m.AuthoredInSessionID, err)
	}
	if !created {
		// A concurrent call with the same key recorded it first.
		return replayed(asked, saved)
	}
	return RecordOutcome{Recorded: true, Message: saved}, nil
}

// replayed answers a record asked for again under first's key: first,
// when asked says what it said; refused otherwise.
func replayed(asked, first domain.HumanMessage) (RecordOutcome, error) {
	if err := asked.Replay(first); err != nil {
		return RecordOutcome{}, err
	}
	return RecordOutcome{Recorded: true, Message: first, AlreadyRecorded: true}, nil
}

func adminOrDefault(k string) string {
	if k == "" {
		return domain.DefaultAdminUser
	}
	return k
}

// GetSessionProvenance gathers a session's provenance: its hierarchy, the
// human messages authored anywhere in it, and the roster naming their
// authors.
type GetSessionProvenance struct {
	hierarchy HierarchyWalker
	users     UserRepository
	messages  HumanMessageRepository
}

// NewGetSessionProvenance returns the use case.
func NewGetSessionProvenance(hierarchy HierarchyWalker, users UserRepository, messages HumanMessageRepository) GetSessionProvenance {
	return GetSessionProvenance{hierarchy: hierarchy, users: users, messages: messages}
}

// Handle returns sessionID's provenance. A session lineage has not heard of
// yet (its creation event still in flight) is shown alone in its tree
// rather than refused: messages may already be recorded against it, and
// the answer must not depend on event delivery.
func (uc GetSessionProvenance) Handle(ctx context.Context, sessionID int64) (domain.SessionProvenance, error) {
	return uc.handle(ctx, sessionID, false)
}

// handle is Handle; requireRecorded refuses a session lineage holds no
// node for (domain.SessionNotKnown) instead of showing it alone.
func (uc GetSessionProvenance) handle(ctx context.Context, sessionID int64, requireRecorded bool) (domain.SessionProvenance, error) {
	if sessionID <= 0 {
		return domain.SessionProvenance{}, validation.Invalid("session_id", "must be a positive session id")
	}
	h, err := uc.hierarchy.Handle(ctx, sessionID)
	if errors.Is(err, domain.ErrNotFound) && requireRecorded {
		return domain.SessionProvenance{}, domain.SessionNotKnown(sessionID)
	}
	if errors.Is(err, domain.ErrNotFound) {
		h = domain.Hierarchy{OriginID: sessionID, RootIDs: []int64{sessionID},
			Nodes: []domain.HierarchyNode{{ID: sessionID, Current: true}}}
	} else if err != nil {
		return domain.SessionProvenance{}, err
	}
	msgs, err := uc.messages.HumanMessagesIn(ctx, h.SessionIDs())
	if err != nil {
		return domain.SessionProvenance{}, fmt.Errorf("gather human messages of %d: %w", sessionID, err)
	}
	users, err := uc.users.ListUsers(ctx)
	if err != nil {
		return domain.SessionProvenance{}, fmt.Errorf("read the roster: %w", err)
	}
	return domain.NewSessionProvenance(sessionID, h, msgs, domain.NewRoster(users)), nil
}

// GetPromptBlocks renders the blocks appended to a session's prompt.
type GetPromptBlocks struct {
	provenance GetSessionProvenance
	clock      clock.Clock
}

// NewGetPromptBlocks returns the use case.
func NewGetPromptBlocks(provenance GetSessionProvenance, clk clock.Clock) GetPromptBlocks {
	return GetPromptBlocks{provenance: provenance, clock: clk}
}

// PromptBlocksRequest asks for one session's prompt blocks.
type PromptBlocksRequest struct {
	SessionID int64
	// ViaMCP is the provenance_via_mcp_enabled setting.
	ViaMCP bool
	// Notes are the session's notes (lifecycle's), rendered here so that
	// every untrusted string of the prompt meets the one sanitiser.
	Notes string
	// RequireRecorded refuses (domain.SessionNotKnown) a session whose
	// created event has not reached lineage yet, rather than render it
	// alone: a spawned session's first turn must not go without its
	// hierarchy because an event trailed.
	RequireRecorded bool
}

// Handle renders the session's blocks.
func (uc GetPromptBlocks) Handle(ctx context.Context, req PromptBlocksRequest) (domain.PromptBlocks, error) {
	p, err := uc.provenance.handle(ctx, req.SessionID, req.RequireRecorded)
	if err != nil {
		return domain.PromptBlocks{}, err
	}
	b := domain.RenderPromptBlocks(p, uc.clock.Now(), req.ViaMCP)
	b.SessionNotes = domain.RenderSessionNotes(req.Notes)
	return b, nil
}
