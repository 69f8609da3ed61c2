package lineagefake

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

// SignInTTL is what StartConsoleSignIn answers as a sign-in's idle TTL.
const SignInTTL = 12 * time.Hour

// SignIns is lineage's ConsoleSignInService in memory, for the console's
// tests: sign-ins start, are read and end, and expire never (lineage's
// own tests prove expiry and the cap). Its refusals of a malformed key
// are lineage's.
type SignIns struct {
	lineagev1.UnimplementedConsoleSignInServiceServer
	mu sync.Mutex
	m  map[[sha256.Size]byte]string // digest → CSRF token
}

// NewSignIns returns a store with no sign-ins.
func NewSignIns() *SignIns { return &SignIns{m: map[[sha256.Size]byte]string{}} }

func key(digest []byte) ([sha256.Size]byte, error) {
	if len(digest) != sha256.Size {
		return [sha256.Size]byte{}, status.Errorf(codes.InvalidArgument, "cookie_sha256: must be the cookie's SHA-256 (%d bytes), got %d bytes", sha256.Size, len(digest))
	}
	return [sha256.Size]byte(digest), nil
}

// Len is how many sign-ins are live.
func (s *SignIns) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// StartConsoleSignIn implements lineagev1.ConsoleSignInServiceServer.
func (s *SignIns) StartConsoleSignIn(_ context.Context, req *lineagev1.StartConsoleSignInRequest) (*lineagev1.StartConsoleSignInResponse, error) {
	k, err := key(req.GetCookieSha256())
	if err != nil {
		return nil, err
	}
	if req.GetCsrf() == "" {
		return nil, status.Error(codes.InvalidArgument, "csrf: required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[k]; ok {
		return nil, status.Error(codes.AlreadyExists, "a console sign-in with this cookie exists")
	}
	s.m[k] = req.GetCsrf()
	return &lineagev1.StartConsoleSignInResponse{IdleTtl: durationpb.New(SignInTTL)}, nil
}

// GetConsoleSignIn implements lineagev1.ConsoleSignInServiceServer.
func (s *SignIns) GetConsoleSignIn(_ context.Context, req *lineagev1.GetConsoleSignInRequest) (*lineagev1.GetConsoleSignInResponse, error) {
	k, err := key(req.GetCookieSha256())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	csrf, ok := s.m[k]
	if !ok {
		return nil, status.Error(codes.NotFound, "no live console sign-in with this cookie")
	}
	return &lineagev1.GetConsoleSignInResponse{Csrf: csrf}, nil
}

// EndConsoleSignIn implements lineagev1.ConsoleSignInServiceServer.
func (s *SignIns) EndConsoleSignIn(_ context.Context, req *lineagev1.EndConsoleSignInRequest) (*lineagev1.EndConsoleSignInResponse, error) {
	k, err := key(req.GetCookieSha256())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k)
	return &lineagev1.EndConsoleSignInResponse{}, nil
}

// Client calls s directly, for tests that hand the console clients rather
// than connections.
func (s *SignIns) Client() lineagev1.ConsoleSignInServiceClient { return signInClient{s} }

type signInClient struct{ s *SignIns }

func (c signInClient) StartConsoleSignIn(ctx context.Context, in *lineagev1.StartConsoleSignInRequest, _ ...grpc.CallOption) (*lineagev1.StartConsoleSignInResponse, error) {
	return c.s.StartConsoleSignIn(ctx, in)
}

func (c signInClient) GetConsoleSignIn(ctx context.Context, in *lineagev1.GetConsoleSignInRequest, _ ...grpc.CallOption) (*lineagev1.GetConsoleSignInResponse, error) {
	return c.s.GetConsoleSignIn(ctx, in)
}

func (c signInClient) EndConsoleSignIn(ctx context.Context, in *lineagev1.EndConsoleSignInRequest, _ ...grpc.CallOption) (*lineagev1.EndConsoleSignInResponse, error) {
	return c.s.EndConsoleSignIn(ctx, in)
}
