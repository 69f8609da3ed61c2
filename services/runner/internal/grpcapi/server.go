// Package grpcapi serves zimmer.runner.v1.RunnerService. The service
// declares no methods yet; they arrive with the runner's use cases.
package grpcapi

import (
	"google.golang.org/grpc"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

// Server implements runnerv1.RunnerServiceServer. The embedded
// UnimplementedRunnerServiceServer answers methods not written yet
// with codes.Unimplemented.
type Server struct {
	runnerv1.UnimplementedRunnerServiceServer
	transcripts Transcripts   // transcripts.go
	interrupts  Interrupts    // interrupt.go
	clones      Clones        // clones.go
	accounts    AccountLister // accounts.go
	costs       Costs         // costs.go
}

var _ runnerv1.RunnerServiceServer = (*Server)(nil)

// NewServer returns the runner API.
func NewServer() *Server { return &Server{} }

// Register adds the service to g.
func (s *Server) Register(g *grpc.Server) { runnerv1.RegisterRunnerServiceServer(g, s) }
