package grpcapi

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// WithCredentials serves the session-credential methods over c.
func (s *Server) WithCredentials(c app.Credentials) *Server {
	s.credentials = c
	return s
}

// MintSessionCredential implements lifecyclev1.LifecycleServiceServer.
func (s *Server) MintSessionCredential(ctx context.Context, req *lifecyclev1.MintSessionCredentialRequest) (*lifecyclev1.MintSessionCredentialResponse, error) {
	c, err := s.credentials.Mint.Handle(ctx, req.GetSessionId(), auditBy(ctx))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.MintSessionCredentialResponse{Credential: &lifecyclev1.MintedSessionCredential{
		Id: c.ID, Token: c.Token, Scopes: c.Scopes, CreatedAt: timestamppb.New(c.CreatedAt),
	}}, nil
}

// RevokeSessionCredential implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RevokeSessionCredential(ctx context.Context, req *lifecyclev1.RevokeSessionCredentialRequest) (*lifecyclev1.RevokeSessionCredentialResponse, error) {
	c, err := s.credentials.Revoke.Handle(ctx, req.GetSessionId(), req.GetCredentialId(), revoker(ctx))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.RevokeSessionCredentialResponse{Credential: credentialMsg(c)}, nil
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
	}
}
