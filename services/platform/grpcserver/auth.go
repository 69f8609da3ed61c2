package grpcserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	accessv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/access/v1"
	"github.com/zimmerhq/zimmer/services/platform/apikey"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// Metadata a Zimmer service presents on every call it makes (grpcclient
// sets both): the internal token proves it is a service, the name says
// which one, for audit lines and logs.
const (
	InternalTokenKey = "x-zimmer-internal-token"
	ServiceKey       = "x-zimmer-service"
)

// SessionTokenPrefix starts every session credential. The gateway resolves
// them; a service refuses them on direct gRPC.
const SessionTokenPrefix = "zsc_"

// Auth is who a server lets in (docs/security.md).
type Auth struct {
	// Operators are ZIMMER_API_KEYS: the public API.
	Operators apikey.Set
	// Admins are ZIMMER_ADMIN_API_KEYS: the public and the admin methods.
	Admins apikey.Set
	// InternalToken is ZIMMER_INTERNAL_TOKEN: the services' identity.
	// Empty, no caller is a service and every internal method is refused.
	InternalToken string
}

// Authorizer authenticates a call's credentials and authorizes its method
// by the method's (zimmer.access.v1.access) option. It is the one place the
// method classes are enforced, for direct gRPC callers and for the
// gateway's REST and MCP clients alike (the gateway forwards them).
type Authorizer struct {
	auth  Auth
	token [sha256.Size]byte
	// access caches each method's rule, looked up once from the
	// registered file descriptors.
	access sync.Map // full method → *accessv1.Access (nil: unclassified)
}

// NewAuthorizer returns the authorizer for auth.
func NewAuthorizer(auth Auth) *Authorizer {
	a := &Authorizer{auth: auth}
	if auth.InternalToken != "" {
		a.token = sha256.Sum256([]byte(auth.InternalToken))
	}
	return a
}

// Authorize returns ctx carrying the call's effective principal
// (principal.FromContext), or the status refusing it: Unauthenticated when
// the credentials are missing or wrong, PermissionDenied when they are
// good but not enough for the method.
func (a *Authorizer) Authorize(ctx context.Context, fullMethod string) (context.Context, error) {
	direct, err := a.authenticate(ctx)
	if err != nil {
		return ctx, err
	}
	effective := direct
	if md, _ := metadata.FromIncomingContext(ctx); len(md.Get(principal.MetadataKey)) > 0 && direct.Kind != principal.Service {
		return ctx, status.Errorf(codes.PermissionDenied,
			"%s is believed only from a Zimmer service (ZIMMER_INTERNAL_TOKEN); this caller is %s", principal.MetadataKey, direct.Describe())
	}
	forwarded, ok, err := principal.Forwarded(ctx)
	if err != nil {
		return ctx, status.Errorf(codes.InvalidArgument, "%v", err)
	}
	if ok {
		switch forwarded.Kind {
		case principal.Operator, principal.Admin, principal.Session:
		default:
			return ctx, status.Errorf(codes.PermissionDenied, "%s forwards a %q principal; only a client's (operator, admin or session) may be forwarded", principal.MetadataKey, forwarded.Kind)
		}
		effective = forwarded
	}
	if err := allow(direct, effective, methodName(fullMethod), a.lookup(fullMethod)); err != nil {
		return ctx, err
	}
	return principal.NewContext(ctx, effective), nil
}

// authenticate establishes the direct caller.
func (a *Authorizer) authenticate(ctx context.Context) (principal.Principal, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(InternalTokenKey); len(v) > 0 {
		if !a.serviceToken(v[0]) {
			return principal.Principal{}, status.Error(codes.Unauthenticated,
				"invalid internal token: a Zimmer service must present this deployment's ZIMMER_INTERNAL_TOKEN as "+InternalTokenKey)
		}
		name := "unnamed service"
		if s := md.Get(ServiceKey); len(s) > 0 && s[0] != "" {
			name = s[0]
		}
		return principal.Principal{Kind: principal.Service, Service: name}, nil
	}
	key := keyFromMetadata(md)
	switch {
	case key == "":
		return principal.Principal{}, status.Error(codes.Unauthenticated,
			"missing credentials: send an operator key (ZIMMER_API_KEYS) or an admin key (ZIMMER_ADMIN_API_KEYS) as x-api-key or authorization: Bearer metadata")
	case strings.HasPrefix(key, SessionTokenPrefix):
		return principal.Principal{}, status.Error(codes.Unauthenticated,
			"a session credential is accepted by the gateway only (REST and MCP), not on direct gRPC: call the gateway with it")
	case a.auth.Admins.Valid(key):
		return principal.Principal{Kind: principal.Admin, KeyHint: principal.KeyHint(key)}, nil
	case a.auth.Operators.Valid(key):
		return principal.Principal{Kind: principal.Operator, KeyHint: principal.KeyHint(key)}, nil
	}
	return principal.Principal{}, status.Error(codes.Unauthenticated,
		"invalid API key: send one of ZIMMER_API_KEYS or ZIMMER_ADMIN_API_KEYS as x-api-key or authorization: Bearer metadata")
}

// serviceToken compares in constant time (over digests, so whatever the
// presented length) and never matches when no token is configured.
func (a *Authorizer) serviceToken(presented string) bool {
	if a.auth.InternalToken == "" {
		return false
	}
	d := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(d[:], a.token[:]) == 1
}

// allow is the rule of the method classes (docs/security.md): direct is who
// called, effective who the call is for (the gateway's client, or direct).
func allow(direct, effective principal.Principal, method string, access *accessv1.Access) error {
	switch access.GetClass() {
	case accessv1.Class_CLASS_INTERNAL:
		if direct.Kind == principal.Service {
			return nil
		}
		return status.Errorf(codes.PermissionDenied,
			"%s is internal to Zimmer's services; no client key may call it (this caller is %s)", method, effective.Describe())
	case accessv1.Class_CLASS_ADMIN:
		if effective.Kind == principal.Admin || effective.Kind == principal.Service {
			return nil
		}
		return status.Errorf(codes.PermissionDenied,
			"%s needs an admin key (ZIMMER_ADMIN_API_KEYS); %s lacks the admin scope", method, lacking(effective))
	case accessv1.Class_CLASS_PUBLIC:
		switch effective.Kind {
		case principal.Operator, principal.Admin, principal.Service:
			return nil
		case principal.Session:
			scope := access.GetSessionScope()
			if scope == "" {
				return status.Errorf(codes.PermissionDenied,
					"%s is not open to session credentials; it needs an operator key (ZIMMER_API_KEYS)", method)
			}
			if !effective.Has(scope) {
				return status.Errorf(codes.PermissionDenied,
					"%s needs the %q scope; %s lacks it (its scopes: %s)", method, scope, effective.Describe(), strings.Join(effective.Scopes, ", "))
			}
			return nil
		}
	}
	return status.Errorf(codes.PermissionDenied,
		"%s has no access class (zimmer.access.v1.access), so no one may call it", method)
}

// lacking names the principal an admin method refused.
func lacking(p principal.Principal) string {
	if p.Kind == principal.Operator {
		return "this operator key"
	}
	return p.Describe()
}

// lookup returns fullMethod's access rule ("/pkg.Service/Method"), nil when
// the method is unknown or unclassified.
func (a *Authorizer) lookup(fullMethod string) *accessv1.Access {
	if v, ok := a.access.Load(fullMethod); ok {
		return v.(*accessv1.Access)
	}
	acc := Access(fullMethod)
	a.access.Store(fullMethod, acc)
	return acc
}

// Access returns the access rule the registered descriptors give fullMethod
// ("/pkg.Service/Method"), or nil when it has none.
func Access(fullMethod string) *accessv1.Access {
	svc, method, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if !ok {
		return nil
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		return nil
	}
	return MethodAccess(md)
}

// MethodAccess returns md's access rule, nil when it has none.
func MethodAccess(md protoreflect.MethodDescriptor) *accessv1.Access {
	opts := md.Options()
	if opts == nil || !proto.HasExtension(opts, accessv1.E_Access) {
		return nil
	}
	acc, _ := proto.GetExtension(opts, accessv1.E_Access).(*accessv1.Access)
	return acc
}

// methodName is "Method" of "/pkg.Service/Method", for messages.
func methodName(fullMethod string) string {
	if i := strings.LastIndex(fullMethod, "/"); i >= 0 {
		return fullMethod[i+1:]
	}
	return fullMethod
}

func authUnary(a *Authorizer) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if open(info.FullMethod) {
			return h(ctx, req)
		}
		ctx, err := a.Authorize(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

// authStream guards streaming methods by the same rule; reflection (a
// stream) stays open.
func authStream(a *Authorizer) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if open(info.FullMethod) {
			return h(srv, ss)
		}
		ctx, err := a.Authorize(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return h(srv, &principalStream{ServerStream: ss, ctx: ctx})
	}
}

type principalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *principalStream) Context() context.Context { return s.ctx }

// open are the methods anyone may call: health, and reflection, which lists
// every method because method names are public (the protos and the OpenAPI
// document are published); authorization never relies on hiding them.
func open(method string) bool {
	return strings.HasPrefix(method, "/grpc.health.") || strings.HasPrefix(method, "/grpc.reflection.")
}

func keyFromMetadata(md metadata.MD) string {
	if v := md.Get("x-api-key"); len(v) > 0 {
		return v[0]
	}
	if v := md.Get("authorization"); len(v) > 0 {
		return apikey.BearerToken(v[0])
	}
	return ""
}

// String describes auth for logs, never its secrets.
func (a Auth) String() string {
	return fmt.Sprintf("operator keys %t, admin keys %t, internal token %t", a.Operators.Enabled(), a.Admins.Enabled(), a.InternalToken != "")
}
