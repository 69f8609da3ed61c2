// Package grpcapi serves zimmer.notification.v1.NotificationService. The service
// declares no methods yet; they arrive with the notification's use cases.
package grpcapi

import (
	"google.golang.org/grpc"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

// Server implements notificationv1.NotificationServiceServer. The embedded
// UnimplementedNotificationServiceServer answers methods not written yet
// with codes.Unimplemented.
type Server struct {
	notificationv1.UnimplementedNotificationServiceServer
}

var _ notificationv1.NotificationServiceServer = (*Server)(nil)

// NewServer returns the notification API.
func NewServer() *Server { return &Server{} }

// Register adds the service to g.
func (s *Server) Register(g *grpc.Server) { notificationv1.RegisterNotificationServiceServer(g, s) }
