// Package boundary carries the human an input boundary established spoke,
// from the boundary (in the gateway) to the service that records it
// (lineage's RecordHumanMessage).
//
// A human message exists only when a boundary established its actor: the
// web UI, which one human reaches, or a Slack user Slack verified. That
// actor never travels in a request field, where any caller of the method
// could assert it; it travels in the call's metadata, and the receiving
// service believes it only from a Zimmer service calling as itself — the
// gateway's own human boundary, not the gateway relaying a client, and
// never a client key (see Verified). docs/security.md says why.
package boundary

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/grpc/metadata"

	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// MetadataKey carries the actor from a boundary to the recording service.
const MetadataKey = "x-zimmer-boundary-actor"

// Kind is a kind of actor a boundary can establish.
type Kind string

// The kinds.
const (
	// WebUIAdmin: the input came through the web UI, which one human — the
	// admin, ZIMMER_ADMIN_USER — reaches.
	WebUIAdmin Kind = "web_ui_admin"
	// SlackUser: Slack delivered the input from the user SlackUserID.
	SlackUser Kind = "slack_user"
)

// Actor is who a boundary established spoke.
type Actor struct {
	Kind Kind `json:"kind"`
	// SlackUserID is set for SlackUser, and only then.
	SlackUserID string `json:"slack_user_id,omitempty"`
}

// Validate reports why a is not an actor a boundary can establish.
func (a Actor) Validate() error {
	switch a.Kind {
	case WebUIAdmin:
		if a.SlackUserID != "" {
			return errors.New("a web UI admin actor carries no slack user id")
		}
	case SlackUser:
		if a.SlackUserID == "" {
			return errors.New("a slack user actor needs the slack user id")
		}
	default:
		return fmt.Errorf("unknown actor kind %q; want %q or %q", a.Kind, WebUIAdmin, SlackUser)
	}
	return nil
}

// Outgoing returns ctx declaring a to the called service. Only a boundary
// the gateway authenticated on its own (never a client's key) may call it.
func Outgoing(ctx context.Context, a Actor) (context.Context, error) {
	if err := a.Validate(); err != nil {
		return ctx, err
	}
	b, err := json.Marshal(a)
	if err != nil {
		return ctx, fmt.Errorf("encode boundary actor: %w", err)
	}
	return metadata.AppendToOutgoingContext(ctx, MetadataKey, string(b)), nil
}

// ErrNoBoundary is the refusal of a call that establishes no actor, or
// that asserts one without the standing to.
var ErrNoBoundary = errors.New("no input boundary established a human actor")

// Verified returns the actor a call's boundary established. It believes
// the metadata only when the call's effective principal (as the gRPC
// server's interceptor put it in ctx) is a Zimmer service acting as
// itself: a client key, a session credential, or a service relaying one
// of them is refused, whatever the metadata says. Every refusal wraps
// ErrNoBoundary and says what was missing.
func Verified(ctx context.Context) (Actor, error) {
	p, ok := principal.FromContext(ctx)
	switch {
	case !ok:
		return Actor{}, fmt.Errorf("%w: the call carries no authenticated principal", ErrNoBoundary)
	case p.Kind != principal.Service:
		return Actor{}, fmt.Errorf("%w: the call is made by %s; only a human boundary inside a Zimmer service (the web UI, Slack; never a client key or a session credential) establishes who spoke",
			ErrNoBoundary, p.Describe())
	}
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(MetadataKey)
	switch len(v) {
	case 0:
		return Actor{}, fmt.Errorf("%w: %s sent no %s", ErrNoBoundary, p.Describe(), MetadataKey)
	case 1:
	default:
		return Actor{}, fmt.Errorf("%w: %s sent %d times", ErrNoBoundary, MetadataKey, len(v))
	}
	var a Actor
	if err := json.Unmarshal([]byte(v[0]), &a); err != nil {
		return Actor{}, fmt.Errorf("%w: decode %s: %w", ErrNoBoundary, MetadataKey, err)
	}
	if err := a.Validate(); err != nil {
		return Actor{}, fmt.Errorf("%w: %s: %w", ErrNoBoundary, MetadataKey, err)
	}
	return a, nil
}
