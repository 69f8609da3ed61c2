package grpcapi

import (
	"context"
	"log/slog"

	"google.golang.org/protobuf/types/known/durationpb"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
)

// SignInServer implements lineagev1.ConsoleSignInServiceServer. Only a
// Zimmer service calling as itself reaches it (the console's connections):
// no key or credential opens the console, so none may start, read or end
// its sign-ins either, even relayed.
type SignInServer struct {
	lineagev1.UnimplementedConsoleSignInServiceServer
	uc     app.ConsoleSignIns
	errors *ProvenanceServer // its toStatus (AlreadyExists, PermissionDenied)
}

var _ lineagev1.ConsoleSignInServiceServer = (*SignInServer)(nil)

// NewSignIns returns the server over uc; logger receives the errors
// reported to callers only as "internal error".
func NewSignIns(logger *slog.Logger, uc app.ConsoleSignIns) *SignInServer {
	return &SignInServer{uc: uc, errors: NewProvenance(logger, ProvenanceUseCases{})}
}

// StartConsoleSignIn implements lineagev1.ConsoleSignInServiceServer.
func (s *SignInServer) StartConsoleSignIn(ctx context.Context, req *lineagev1.StartConsoleSignInRequest) (*lineagev1.StartConsoleSignInResponse, error) {
	if err := serviceItself(ctx, "StartConsoleSignIn"); err != nil {
		return nil, s.errors.toStatus(ctx, err)
	}
	ttl, err := s.uc.Start(ctx, req.GetCookieSha256(), req.GetCsrf())
	if err != nil {
		return nil, s.errors.toStatus(ctx, err)
	}
	return &lineagev1.StartConsoleSignInResponse{IdleTtl: durationpb.New(ttl)}, nil
}

// GetConsoleSignIn implements lineagev1.ConsoleSignInServiceServer.
func (s *SignInServer) GetConsoleSignIn(ctx context.Context, req *lineagev1.GetConsoleSignInRequest) (*lineagev1.GetConsoleSignInResponse, error) {
	if err := serviceItself(ctx, "GetConsoleSignIn"); err != nil {
		return nil, s.errors.toStatus(ctx, err)
	}
	csrf, err := s.uc.Get(ctx, req.GetCookieSha256(), req.GetTouch())
	if err != nil {
		return nil, s.errors.toStatus(ctx, err)
	}
	return &lineagev1.GetConsoleSignInResponse{Csrf: csrf}, nil
}

// EndConsoleSignIn implements lineagev1.ConsoleSignInServiceServer.
func (s *SignInServer) EndConsoleSignIn(ctx context.Context, req *lineagev1.EndConsoleSignInRequest) (*lineagev1.EndConsoleSignInResponse, error) {
	if err := serviceItself(ctx, "EndConsoleSignIn"); err != nil {
		return nil, s.errors.toStatus(ctx, err)
	}
	if err := s.uc.End(ctx, req.GetCookieSha256()); err != nil {
		return nil, s.errors.toStatus(ctx, err)
	}
	return &lineagev1.EndConsoleSignInResponse{}, nil
}

// AttemptConsoleSignIn implements lineagev1.ConsoleSignInServiceServer.
func (s *SignInServer) AttemptConsoleSignIn(ctx context.Context, req *lineagev1.AttemptConsoleSignInRequest) (*lineagev1.AttemptConsoleSignInResponse, error) {
	if err := serviceItself(ctx, "AttemptConsoleSignIn"); err != nil {
		return nil, s.errors.toStatus(ctx, err)
	}
	wait, err := s.uc.Attempt(ctx, req.GetAddress())
	if err != nil {
		return nil, s.errors.toStatus(ctx, err)
	}
	res := &lineagev1.AttemptConsoleSignInResponse{}
	if wait > 0 {
		res.RetryAfter = durationpb.New(wait)
	}
	return res, nil
}

// ClearConsoleSignInAttempts implements lineagev1.ConsoleSignInServiceServer.
func (s *SignInServer) ClearConsoleSignInAttempts(ctx context.Context, req *lineagev1.ClearConsoleSignInAttemptsRequest) (*lineagev1.ClearConsoleSignInAttemptsResponse, error) {
	if err := serviceItself(ctx, "ClearConsoleSignInAttempts"); err != nil {
		return nil, s.errors.toStatus(ctx, err)
	}
	if err := s.uc.ClearAttempts(ctx, req.GetAddress()); err != nil {
		return nil, s.errors.toStatus(ctx, err)
	}
	return &lineagev1.ClearConsoleSignInAttemptsResponse{}, nil
}
