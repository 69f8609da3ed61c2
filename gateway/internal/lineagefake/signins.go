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
// are lineage's. Password attempts are recorded, not counted: an address
// is locked out only when a test says so (LockOut), since the limit is
// lineage's rule and lineage's tests prove it.
type SignIns struct {
	lineagev1.UnimplementedConsoleSignInServiceServer
	mu       sync.Mutex
	m        map[[sha256.Size]byte]string // digest → CSRF token
	attempts []string                     // "attempt <addr>", "clear <addr>", in order
	locked   map[string]time.Duration     // address → what AttemptConsoleSignIn answers
}

// NewSignIns returns a store with no sign-ins.
func NewSignIns() *SignIns {
	return &SignIns{m: map[[sha256.Size]byte]string{}, locked: map[string]time.Duration{}}
}

// LockOut makes AttemptConsoleSignIn answer address with retry_after wait
// (0: let it through again).
func (s *SignIns) LockOut(address string, wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.locked[address] = wait
}

// Attempts are the password attempts let through and the clears, in
// order: "attempt 127.0.0.1", "clear 127.0.0.1".
func (s *SignIns) Attempts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.attempts...)
}

// AttemptConsoleSignIn implements lineagev1.ConsoleSignInServiceServer.
func (s *SignIns) AttemptConsoleSignIn(_ context.Context, req *lineagev1.AttemptConsoleSignInRequest) (*lineagev1.AttemptConsoleSignInResponse, error) {
	if req.GetAddress() == "" {
		return nil, status.Error(codes.InvalidArgument, "address: required: the client's address")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if wait := s.locked[req.GetAddress()]; wait > 0 {
		return &lineagev1.AttemptConsoleSignInResponse{RetryAfter: durationpb.New(wait)}, nil
	}
	s.attempts = append(s.attempts, "attempt "+req.GetAddress())
	return &lineagev1.AttemptConsoleSignInResponse{}, nil
}

// ClearConsoleSignInAttempts implements lineagev1.ConsoleSignInServiceServer.
func (s *SignIns) ClearConsoleSignInAttempts(_ context.Context, req *lineagev1.ClearConsoleSignInAttemptsRequest) (*lineagev1.ClearConsoleSignInAttemptsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, "clear "+req.GetAddress())
	return &lineagev1.ClearConsoleSignInAttemptsResponse{}, nil
}

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

func (c signInClient) AttemptConsoleSignIn(ctx context.Context, in *lineagev1.AttemptConsoleSignInRequest, _ ...grpc.CallOption) (*lineagev1.AttemptConsoleSignInResponse, error) {
	return c.s.AttemptConsoleSignIn(ctx, in)
}

func (c signInClient) ClearConsoleSignInAttempts(ctx context.Context, in *lineagev1.ClearConsoleSignInAttemptsRequest, _ ...grpc.CallOption) (*lineagev1.ClearConsoleSignInAttemptsResponse, error) {
	return c.s.ClearConsoleSignInAttempts(ctx, in)
}
