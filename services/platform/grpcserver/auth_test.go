package grpcserver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	accessv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/access/v1"
	"github.com/zimmerhq/zimmer/services/platform/apikey"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// The access test service: one method per class and session scope, each
// answering the Describe of the principal its handler received.
const accessService = "accesstest.Access"

var accessMethods = []fixtureMethod{
	{"Public", "google.protobuf.StringValue", "google.protobuf.StringValue", public("")},
	{"Self", "google.protobuf.StringValue", "google.protobuf.StringValue", public(principal.ScopeSelf)},
	{"Read", "google.protobuf.StringValue", "google.protobuf.StringValue", public(principal.ScopeSessionsRead)},
	{"Admin", "google.protobuf.StringValue", "google.protobuf.StringValue", &accessv1.Access{Class: accessv1.Class_CLASS_ADMIN}},
	{"Internal", "google.protobuf.StringValue", "google.protobuf.StringValue", &accessv1.Access{Class: accessv1.Class_CLASS_INTERNAL}},
	{"Unclassified", "google.protobuf.StringValue", "google.protobuf.StringValue", nil},
}

func init() { registerFixture("accesstest", "Access", accessMethods) }

func accessDesc() *grpc.ServiceDesc {
	d := &grpc.ServiceDesc{ServiceName: accessService, HandlerType: (*any)(nil)}
	for _, m := range accessMethods {
		d.Methods = append(d.Methods, unaryMethod(accessService, m.name, func() proto.Message { return new(wrapperspb.StringValue) },
			func(ctx context.Context, _ proto.Message) (proto.Message, error) {
				p, ok := principal.FromContext(ctx)
				if !ok {
					return nil, status.Error(codes.Internal, "the handler got no principal")
				}
				return wrapperspb.String(p.Describe()), nil
			}))
	}
	return d
}

const (
	operatorKey   = "operator-key-0123456789abcd"
	adminKey      = "admin-key-0123456789wxyz"
	internalToken = "internal-token-0123456789"
)

// caller is one way of calling: the identity the connection presents and
// the principal a call forwards (if any).
type caller struct {
	name    string
	id      grpcclient.Identity
	forward *principal.Principal
	// raw metadata added to each call, for what grpcclient never sends.
	raw []string
}

var (
	operator   = principal.Principal{Kind: principal.Operator, KeyHint: "abcd"}
	admin      = principal.Principal{Kind: principal.Admin, KeyHint: "wxyz"}
	selfOnly   = principal.Principal{Kind: principal.Session, SessionID: 12, CredentialID: "c1", Scopes: []string{principal.ScopeSelf}}
	selfReader = principal.Principal{Kind: principal.Session, SessionID: 12, CredentialID: "c2", Scopes: []string{principal.ScopeSelf, principal.ScopeSessionsRead}}
)

// want is the outcome of a call: the code, and on OK who the handler saw
// (on a refusal, a fragment of the message).
type want struct {
	code codes.Code
	text string
}

func ok(describe string) want { return want{codes.OK, describe} }

var (
	unauthenticated = want{codes.Unauthenticated, "missing credentials"}
	wrongKey        = want{codes.Unauthenticated, "invalid API key"}
	denyInternal    = want{codes.PermissionDenied, "is internal to Zimmer's services; no client key may call it"}
	denyUnclassed   = want{codes.PermissionDenied, "has no access class"}
)

// Each principal kind × each method class: allowed, with the effective
// principal in the handler's context, or refused with the exact code and
// a message saying what is needed.
func TestEachPrincipalAgainstEachClass(t *testing.T) {
	t.Parallel()
	addr := serve(t, grpcserver.Auth{
		Operators: apikey.Parse(operatorKey), Admins: apikey.Parse(adminKey), InternalToken: internalToken,
	}, accessDesc())
	service := grpcclient.AsService("gateway", internalToken)

	adminDenied := func(who string) want {
		return want{codes.PermissionDenied, "Admin needs an admin key (ZIMMER_ADMIN_API_KEYS); " + who + " lacks the admin scope"}
	}
	methods := []string{"Public", "Self", "Read", "Admin", "Internal", "Unclassified"}
	for _, tc := range []struct {
		caller caller
		want   []want // per method, in the order of methods
	}{
		{caller{name: "no credentials", id: grpcclient.Anonymous()},
			[]want{unauthenticated, unauthenticated, unauthenticated, unauthenticated, unauthenticated, unauthenticated}},
		{caller{name: "a wrong key", id: grpcclient.WithKey("nope")},
			[]want{wrongKey, wrongKey, wrongKey, wrongKey, wrongKey, wrongKey}},
		{caller{name: "a session credential on direct gRPC", id: grpcclient.WithKey(grpcserver.SessionTokenPrefix + "abc")},
			repeat(want{codes.Unauthenticated, "a session credential is accepted by the gateway only (REST and MCP)"})},
		{caller{name: "a wrong internal token", id: grpcclient.AsService("gateway", "guess")},
			repeat(want{codes.Unauthenticated, "invalid internal token"})},
		{caller{name: "an operator key", id: grpcclient.WithKey(operatorKey)},
			[]want{ok("operator key …abcd"), ok("operator key …abcd"), ok("operator key …abcd"),
				adminDenied("this operator key"), denyInternal, denyUnclassed}},
		{caller{name: "an admin key", id: grpcclient.WithKey(adminKey)},
			[]want{ok("admin key …wxyz"), ok("admin key …wxyz"), ok("admin key …wxyz"), ok("admin key …wxyz"), denyInternal, denyUnclassed}},
		{caller{name: "a service for itself", id: service},
			[]want{ok("the gateway"), ok("the gateway"), ok("the gateway"), ok("the gateway"), ok("the gateway"), denyUnclassed}},
		{caller{name: "a service relaying an operator key", id: service, forward: &operator},
			[]want{ok("operator key …abcd"), ok("operator key …abcd"), ok("operator key …abcd"),
				adminDenied("this operator key"), ok("operator key …abcd"), denyUnclassed}},
		{caller{name: "a service relaying an admin key", id: service, forward: &admin},
			[]want{ok("admin key …wxyz"), ok("admin key …wxyz"), ok("admin key …wxyz"), ok("admin key …wxyz"), ok("admin key …wxyz"), denyUnclassed}},
		{caller{name: "a service relaying a self-only session credential", id: service, forward: &selfOnly},
			[]want{
				{codes.PermissionDenied, "Public is not open to session credentials; it needs an operator key"},
				ok("session #12's credential"),
				{codes.PermissionDenied, `Read needs the "sessions.read" scope; session #12's credential lacks it (its scopes: self)`},
				adminDenied("session #12's credential"),
				ok("session #12's credential"), denyUnclassed,
			}},
		{caller{name: "a service relaying a reader session credential", id: service, forward: &selfReader},
			[]want{
				{codes.PermissionDenied, "Public is not open to session credentials"},
				ok("session #12's credential"), ok("session #12's credential"),
				adminDenied("session #12's credential"), ok("session #12's credential"), denyUnclassed,
			}},
		{caller{name: "an operator key forwarding an admin", id: grpcclient.WithKey(operatorKey), forward: &admin},
			repeat(want{codes.PermissionDenied, "x-zimmer-principal is believed only from a Zimmer service (ZIMMER_INTERNAL_TOKEN); this caller is operator key …abcd"})},
		{caller{name: "a service forwarding a service", id: service, forward: &principal.Principal{Kind: principal.Service, Service: "runner"}},
			repeat(want{codes.PermissionDenied, `forwards a "service" principal`})},
		{caller{name: "a service forwarding garbage", id: service, raw: []string{principal.MetadataKey, "{"}},
			repeat(want{codes.InvalidArgument, "decode x-zimmer-principal"})},
	} {
		t.Run(tc.caller.name, func(t *testing.T) {
			t.Parallel()
			conn, err := grpcclient.Dial(addr, tc.caller.id)
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			ctx := t.Context()
			if tc.caller.forward != nil {
				ctx, err = principal.Outgoing(ctx, *tc.caller.forward)
				require.NoError(t, err)
			}
			if len(tc.caller.raw) > 0 {
				ctx = metadata.AppendToOutgoingContext(ctx, tc.caller.raw...)
			}
			for i, m := range methods {
				out := new(wrapperspb.StringValue)
				err := conn.Invoke(ctx, "/"+accessService+"/"+m, wrapperspb.String(""), out)
				w := tc.want[i]
				require.Equal(t, w.code, status.Code(err), "%s: %v", m, err)
				if w.code == codes.OK {
					require.Equal(t, w.text, out.GetValue(), "%s: the handler's principal", m)
				} else {
					require.Contains(t, status.Convert(err).Message(), w.text, m)
				}
			}
		})
	}
}

func repeat(w want) []want {
	out := make([]want, len(accessMethods))
	for i := range out {
		out[i] = w
	}
	return out
}

// Health and reflection stay open to a caller with no credentials.
func TestHealthAndReflectionAreOpen(t *testing.T) {
	t.Parallel()
	addr := serve(t, grpcserver.Auth{Operators: apikey.Parse(operatorKey), InternalToken: internalToken}, accessDesc())
	conn, err := grpcclient.Dial(addr, grpcclient.Anonymous())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	resp, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}))
	listed, err := stream.Recv()
	require.NoError(t, err)
	var names []string
	for _, s := range listed.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	require.Contains(t, names, accessService, "reflection lists every service: method names are public, access is checked per call")
}

// With no internal token configured, no caller is a service: a presented
// token, even an empty one, never matches.
func TestNoTokenConfiguredMeansNoService(t *testing.T) {
	t.Parallel()
	addr := serve(t, grpcserver.Auth{Operators: apikey.Parse(operatorKey)}, accessDesc())
	for _, token := range []string{"", "anything"} {
		conn, err := grpcclient.Dial(addr, grpcclient.AsService("gateway", token))
		require.NoError(t, err)
		err = conn.Invoke(t.Context(), "/"+accessService+"/Internal", wrapperspb.String(""), new(wrapperspb.StringValue))
		require.Equal(t, codes.Unauthenticated, status.Code(err), "token %q", token)
		_ = conn.Close()
	}
}
