// Package grpcapi serves zimmer.queue.v1.QueueService. The service declares
// no methods yet; they arrive with the queue's use cases.
package grpcapi

import (
	"google.golang.org/grpc"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
)

// Server implements queuev1.QueueServiceServer. The embedded
// UnimplementedQueueServiceServer answers methods not written yet with
// codes.Unimplemented.
type Server struct {
	queuev1.UnimplementedQueueServiceServer
}

var _ queuev1.QueueServiceServer = (*Server)(nil)

// NewServer returns the queue API.
func NewServer() *Server { return &Server{} }

// Register adds the service to g.
func (s *Server) Register(g *grpc.Server) { queuev1.RegisterQueueServiceServer(g, s) }
