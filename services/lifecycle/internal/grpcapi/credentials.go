package grpcapi

import (
	"context"
	"math"

	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// WithCredentials serves the session-credential methods over c.
func (s *Server) WithCredentials(c app.Credentials) *Server {
	s.credentials = c
	return s
}

// MintSessionCredential implements lifecyclev1.LifecycleServiceServer.
func (s *Server) MintSessionCredential(ctx context.Context, req *lifecyclev1.MintSessionCredentialRequest) (*lifecyclev1.MintSessionCredentialResponse, error) {
	opts := domain.MintOptions{Turn: turnOf(req.GetTurn())}
	if req.GetTtl() != nil {
		if err := req.GetTtl().CheckValid(); err != nil {
			return nil, s.toStatus(ctx, validation.Invalid("ttl", "is not a duration: %v", err))
		}
		if opts.TTL = req.GetTtl().AsDuration(); opts.TTL == 0 {
			return nil, s.toStatus(ctx, validation.Invalid("ttl", "is 0; give a lifetime above 0, or none for a credential that lives until revoked"))
		}
	}
	c, err := s.credentials.Mint.Handle(ctx, req.GetSessionId(), auditBy(ctx), opts)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.MintSessionCredentialResponse{Credential: &lifecyclev1.MintedSessionCredential{
		Id: c.ID, Token: c.Token, Scopes: c.Scopes, CreatedAt: timestamppb.New(c.CreatedAt),
	}}, nil
}

// RevokeSessionCredential implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RevokeSessionCredential(ctx context.Context, req *lifecyclev1.RevokeSessionCredentialRequest) (*lifecyclev1.RevokeSessionCredentialResponse, error) {
	p, _ := principal.FromContext(ctx)
	c, err := s.credentials.Revoke.Handle(ctx, req.GetSessionId(), req.GetCredentialId(), revoker(ctx), p.Kind == principal.Service)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.RevokeSessionCredentialResponse{Credential: credentialMsg(c)}, nil
}

// RevokeTurnCredentials implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RevokeTurnCredentials(ctx context.Context, req *lifecyclev1.RevokeTurnCredentialsRequest) (*lifecyclev1.RevokeTurnCredentialsResponse, error) {
	n, err := s.credentials.RevokeTurn.Handle(ctx, req.GetSessionId(), req.GetTurnId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.RevokeTurnCredentialsResponse{Revoked: int32(min(n, math.MaxInt32))}, nil
}

// SweepNodeCredentials implements lifecyclev1.LifecycleServiceServer.
func (s *Server) SweepNodeCredentials(ctx context.Context, req *lifecyclev1.SweepNodeCredentialsRequest) (*lifecyclev1.SweepNodeCredentialsResponse, error) {
	n, err := s.credentials.SweepNode.Handle(ctx, req.GetNode(), req.GetIncarnation())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.SweepNodeCredentialsResponse{Revoked: int32(min(n, math.MaxInt32))}, nil
}

// AuthenticateSessionCredential implements lifecyclev1.LifecycleServiceServer.
func (s *Server) AuthenticateSessionCredential(ctx context.Context, req *lifecyclev1.AuthenticateSessionCredentialRequest) (*lifecyclev1.AuthenticateSessionCredentialResponse, error) {
	c, err := s.credentials.Authenticate.Handle(ctx, req.GetToken())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.AuthenticateSessionCredentialResponse{Credential: credentialMsg(c)}, nil
}

func credentialMsg(c domain.Credential) *lifecyclev1.SessionCredential {
	return &lifecyclev1.SessionCredential{
		Id: c.ID, SessionId: c.SessionID, Scopes: c.Scopes, CreatedAt: timestamppb.New(c.CreatedAt),
		RevokedAt: timestampOrNil(c.RevokedAt), RevokedReason: c.RevokedReason,
		ExpiresAt: timestampOrNil(c.ExpiresAt), Turn: turnMsg(c.Turn),
	}
}

func turnOf(t *lifecyclev1.CredentialTurn) *domain.CredentialTurn {
	if t == nil {
		return nil
	}
	return &domain.CredentialTurn{Node: t.GetNode(), Incarnation: t.GetIncarnation(), TurnID: t.GetTurnId()}
}

func turnMsg(t *domain.CredentialTurn) *lifecyclev1.CredentialTurn {
	if t == nil {
		return nil
	}
	return &lifecyclev1.CredentialTurn{Node: t.Node, Incarnation: t.Incarnation, TurnId: t.TurnID}
}
