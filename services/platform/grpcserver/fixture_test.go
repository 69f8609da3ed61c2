package grpcserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	_ "google.golang.org/protobuf/types/known/structpb"   // google/protobuf/struct.proto, for the fixtures' descriptors
	_ "google.golang.org/protobuf/types/known/wrapperspb" // google/protobuf/wrappers.proto

	accessv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/access/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// fixtureMethod is a method of a test service: its request and response
// types (fully qualified) and its access rule (nil: unclassified).
type fixtureMethod struct {
	name, in, out string
	access        *accessv1.Access
}

// registerFixture registers a file declaring service pkg.svc in the global
// registry, as a generated package does at init, so that the server looks
// its methods' access rules up the same way it does Zimmer's.
func registerFixture(pkg, svc string, methods []fixtureMethod) {
	sd := &descriptorpb.ServiceDescriptorProto{Name: proto.String(svc)}
	for _, m := range methods {
		opts := &descriptorpb.MethodOptions{}
		if m.access != nil {
			proto.SetExtension(opts, accessv1.E_Access, m.access)
		}
		sd.Method = append(sd.Method, &descriptorpb.MethodDescriptorProto{
			Name: proto.String(m.name), InputType: proto.String("." + m.in), OutputType: proto.String("." + m.out), Options: opts,
		})
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:       proto.String(pkg + "/fixture.proto"),
		Package:    proto.String(pkg),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/wrappers.proto", "google/protobuf/struct.proto"},
		Service:    []*descriptorpb.ServiceDescriptorProto{sd},
	}, protoregistry.GlobalFiles)
	if err != nil {
		panic(err)
	}
	if err := protoregistry.GlobalFiles.RegisterFile(fd); err != nil {
		panic(err)
	}
}

func public(scope string) *accessv1.Access {
	return &accessv1.Access{Class: accessv1.Class_CLASS_PUBLIC, SessionScope: scope}
}

// unaryMethod is a grpc.MethodDesc decoding newReq and answering what
// answer makes of the call's context and request.
func unaryMethod(service, name string, newReq func() proto.Message, answer func(context.Context, proto.Message) (proto.Message, error)) grpc.MethodDesc {
	return grpc.MethodDesc{MethodName: name, Handler: func(_ any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
		req := newReq()
		if err := dec(req); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, req any) (any, error) { return answer(ctx, req.(proto.Message)) }
		if in == nil {
			return h(ctx, req)
		}
		return in(ctx, req, &grpc.UnaryServerInfo{FullMethod: "/" + service + "/" + name}, h)
	}}
}

// serve runs srv on a loopback port until the test ends; it returns the
// address.
func serve(t *testing.T, auth grpcserver.Auth, descs ...*grpc.ServiceDesc) string {
	t.Helper()
	srv := grpcserver.New(slogx.Discard(), auth)
	for _, d := range descs {
		srv.RegisterService(d, struct{}{})
	}
	lis, err := grpcserver.Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis, time.Second) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return lis.Addr().String()
}
