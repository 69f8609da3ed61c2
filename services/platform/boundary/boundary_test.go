package boundary_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/zimmerhq/zimmer/services/platform/boundary"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// incoming is ctx as the server sees a call: p as the interceptor put it,
// and the metadata the caller sent.
func incoming(t *testing.T, p *principal.Principal, out context.Context) context.Context {
	t.Helper()
	md, _ := metadata.FromOutgoingContext(out)
	ctx := metadata.NewIncomingContext(context.Background(), md)
	if p != nil {
		ctx = principal.NewContext(ctx, *p)
	}
	return ctx
}

func TestVerifiedBelievesOnlyAServiceActingAsItself(t *testing.T) {
	t.Parallel()
	gateway := principal.Principal{Kind: principal.Service, Service: "gateway"}
	for _, a := range []boundary.Actor{{Kind: boundary.WebUIAdmin}, {Kind: boundary.SlackUser, SlackUserID: "U42"}} {
		out, err := boundary.Outgoing(context.Background(), a)
		require.NoError(t, err)
		got, err := boundary.Verified(incoming(t, &gateway, out))
		require.NoError(t, err)
		require.Equal(t, a, got)
	}

	admin, err := boundary.Outgoing(context.Background(), boundary.Actor{Kind: boundary.WebUIAdmin})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		p    *principal.Principal
		want string
	}{
		{"no principal", nil, "carries no authenticated principal"},
		{"an operator key", &principal.Principal{Kind: principal.Operator, KeyHint: "abcd"}, "made by operator key …abcd"},
		{"an admin key", &principal.Principal{Kind: principal.Admin}, "made by admin key"},
		{"a session credential", &principal.Principal{Kind: principal.Session, SessionID: 12}, "made by session #12's credential"},
	} {
		_, err := boundary.Verified(incoming(t, tc.p, admin))
		require.ErrorIs(t, err, boundary.ErrNoBoundary, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

func TestVerifiedRefusesAMissingOrMalformedActor(t *testing.T) {
	t.Parallel()
	gateway := principal.Principal{Kind: principal.Service, Service: "gateway"}
	for _, tc := range []struct {
		name string
		md   metadata.MD
		want string
	}{
		{"none", metadata.MD{}, "the gateway sent no x-zimmer-boundary-actor"},
		{"twice", metadata.Pairs(boundary.MetadataKey, `{"kind":"web_ui_admin"}`, boundary.MetadataKey, `{"kind":"web_ui_admin"}`), "sent 2 times"},
		{"not JSON", metadata.Pairs(boundary.MetadataKey, "web_ui_admin"), "decode"},
		{"unknown kind", metadata.Pairs(boundary.MetadataKey, `{"kind":"author","slack_user_id":"tadasant"}`), `unknown actor kind "author"`},
		{"slack without id", metadata.Pairs(boundary.MetadataKey, `{"kind":"slack_user"}`), "needs the slack user id"},
		{"admin with a slack id", metadata.Pairs(boundary.MetadataKey, `{"kind":"web_ui_admin","slack_user_id":"U1"}`), "carries no slack user id"},
	} {
		ctx := principal.NewContext(metadata.NewIncomingContext(context.Background(), tc.md), gateway)
		_, err := boundary.Verified(ctx)
		require.ErrorIs(t, err, boundary.ErrNoBoundary, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	_, err := boundary.Outgoing(context.Background(), boundary.Actor{Kind: "author"})
	require.Error(t, err, "a boundary cannot declare an actor the receiver would refuse")
}
