// Package grpcclient dials the other Zimmer services.
package grpcclient

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
)

// reconnect is how a connection comes back after the service it reaches
// restarts. gRPC's default waits up to 120 s between attempts, so a caller
// kept answering "unavailable" for seconds after the service was back; a
// dial to a peer on loopback or a private network is cheap, so retrying it
// at most every second costs nothing and bounds that window to a second.
var reconnect = grpc.ConnectParams{
	Backoff: backoff.Config{
		BaseDelay:  50 * time.Millisecond,
		Multiplier: 1.6,
		Jitter:     0.2,
		MaxDelay:   time.Second,
	},
	MinConnectTimeout: 5 * time.Second,
}

// Identity is who a connection's calls present themselves as.
type Identity struct {
	metadata map[string]string
}

// AsService is a Zimmer service named name (lifecycle, gateway, …) proving
// it is one with the deployment's internal token (ZIMMER_INTERNAL_TOKEN).
// Internal methods accept only such callers; a call that also forwards a
// client's principal (principal.Outgoing on its context) is authorized as
// that client.
func AsService(name, internalToken string) Identity {
	return Identity{metadata: map[string]string{
		grpcserver.InternalTokenKey: internalToken,
		grpcserver.ServiceKey:       name,
	}}
}

// WithKey is a client presenting an operator or admin key (a tool, a test).
func WithKey(apiKey string) Identity {
	return Identity{metadata: map[string]string{"x-api-key": apiKey}}
}

// Anonymous presents nothing: enough for health and reflection only.
func Anonymous() Identity { return Identity{} }

// Dial returns a lazily-connecting client for addr whose every call
// presents id, carries messages as large as the servers take
// (grpcserver.MaxMessageBytes) and reconnects within a second of the peer
// coming back. A principal the caller put on a call's context with
// principal.Outgoing travels with that call. Services talk over loopback
// or a private network; transport security is the deployment's concern
// (see deploy/README.md and docs/security.md). extra adds to the options,
// e.g. the gateway's interceptor forwarding its client's principal.
//
// addr names one replica or several (ParseTarget): calls are spread over
// the replicas that answer (gRPC's round_robin), so one replica's death
// costs only the calls it held (docs/scaling.md).
func Dial(addr string, id Identity, extra ...grpc.DialOption) (*grpc.ClientConn, error) {
	target, err := ParseTarget(addr)
	if err != nil {
		return nil, err
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(reconnect),
		// Every address a resolver gives, not only the first (pick_first):
		// the replicas of a service share its load, and a dead one is
		// skipped while the others answer.
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`),
		// The caller's view of each call (package metrics).
		grpc.WithStatsHandler(otelgrpc.NewClientHandler()),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(grpcserver.MaxMessageBytes),
			grpc.MaxCallSendMsgSize(grpcserver.MaxMessageBytes),
		),
	}
	if len(target.static) > 1 {
		// A fixed list: a resolver of this connection's own that reports
		// it once, as grpc's manual resolver is meant for.
		r := manual.NewBuilderWithScheme("zimmer-static")
		state := resolver.State{}
		for _, a := range target.static {
			state.Addresses = append(state.Addresses, resolver.Address{Addr: a})
		}
		r.InitialState(state)
		opts = append(opts, grpc.WithResolvers(r))
	}
	if len(id.metadata) > 0 {
		opts = append(opts, grpc.WithPerRPCCredentials(callCredentials(id.metadata)))
	}
	conn, err := grpc.NewClient(target.grpc, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return conn, nil
}

// ReplicaSeparator joins the addresses of a service's replicas in one
// address setting: "127.0.0.1:9101+127.0.0.1:9111". Not a comma, which
// separates the entries of the subscriber=address lists
// (LIFECYCLE_EFFECT_CONSUMERS), and nothing a shell treats specially.
const ReplicaSeparator = "+"

// Target is a parsed address setting.
type Target struct {
	grpc   string   // what grpc.NewClient is given
	static []string // the replicas' host:port when listed, in order
}

// ParseTarget reads an address setting: one host:port; several joined by
// ReplicaSeparator (replicas on known addresses, as make run-replicas and
// the e2e tests start them); or a gRPC target with a scheme, e.g.
// dns:///lifecycle.zimmer.svc:9101, whose every A record is a replica (a
// Kubernetes headless Service). The error says what is wrong and what is
// wanted, for a config's Validate to report under its variable's name.
func ParseTarget(addr string) (Target, error) {
	addr = strings.TrimSpace(addr)
	if scheme, rest, ok := strings.Cut(addr, "://"); ok {
		if scheme != "dns" || strings.TrimPrefix(rest, "/") == "" {
			return Target{}, fmt.Errorf("%q: want host:port, host:port+host:port+…, or dns:///host:port", addr)
		}
		return Target{grpc: addr}, nil
	}
	var hosts []string
	for _, a := range strings.Split(addr, ReplicaSeparator) {
		a = strings.TrimSpace(a)
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return Target{}, fmt.Errorf("%q: want host:port, host:port+host:port+…, or dns:///host:port", addr)
		}
		hosts = append(hosts, a)
	}
	if len(hosts) == 1 {
		return Target{grpc: hosts[0], static: hosts}, nil
	}
	return Target{grpc: "zimmer-static:///replicas", static: hosts}, nil
}

type callCredentials map[string]string

func (c callCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return c, nil
}

func (callCredentials) RequireTransportSecurity() bool { return false }
