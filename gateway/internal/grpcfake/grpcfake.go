// Package grpcfake is what the gateway's service fakes are made of: a
// recorder behind a service's generated server interface. It records each
// call (its method, its request, the principal and the surface the gateway
// forwarded) and answers what the test set: an error for every call
// (FailWith), a response or error per method (Answer, Handle), or else the
// method's empty response, filled in by the fake's defaults. It runs no
// rule of the service it stands in for: a gateway test says what the
// service would answer and asserts what the gateway makes of it; the
// service's own tests, and the end-to-end tests, prove the service.
package grpcfake

import (
	"context"
	"path"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// Call is one call a fake received.
type Call struct {
	Method    string // the RPC's name, e.g. "FollowUp"
	Request   proto.Message
	Principal principal.Principal // the principal the gateway forwarded
	Surface   string              // the surface the gateway declared (platform/surface)
}

// Handler answers one call: a response of the method's type, or an error.
type Handler func(req proto.Message) (proto.Message, error)

// Recorder records calls and answers them; a fake embeds it beside its
// service's Unimplemented server.
type Recorder struct {
	mu       sync.Mutex
	calls    []Call
	handlers map[string]Handler
	fail     error
	defaults func(resp protoreflect.Message)
}

// NewRecorder returns a recorder with no calls; defaults (may be nil)
// fills in the empty response of a method the test set no answer for.
func NewRecorder(defaults func(resp protoreflect.Message)) *Recorder {
	return &Recorder{handlers: map[string]Handler{}, defaults: defaults}
}

// FailWith makes every later call fail with err (nil: answer again).
func (r *Recorder) FailWith(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = err
}

// Answer makes every later call of method answer resp (a copy) or err.
func (r *Recorder) Answer(method string, resp proto.Message, err error) {
	r.Handle(method, func(proto.Message) (proto.Message, error) {
		if err != nil {
			return nil, err
		}
		return proto.Clone(resp), nil
	})
}

// Handle makes every later call of method answer what h returns.
func (r *Recorder) Handle(method string, h Handler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers[method] = h
}

// Calls are the calls received so far, oldest first; with methods, only
// the calls of those.
func (r *Recorder) Calls(methods ...string) []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Call
	for _, c := range r.calls {
		if len(methods) == 0 || slices.Contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// Record records a call of the method ctx is serving and returns
// FailWith's error: for a streaming method, which a test drives itself.
func (r *Recorder) Record(ctx context.Context, req proto.Message) error {
	_, err := r.record(ctx, req)
	return err
}

func (r *Recorder) record(ctx context.Context, req proto.Message) (Handler, error) {
	fullMethod, _ := grpc.Method(ctx)
	method := path.Base(fullMethod)
	p, _ := principal.FromContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, Call{Method: method, Request: proto.Clone(req), Principal: p, Surface: surface.Incoming(ctx)})
	return r.handlers[method], r.fail
}

// Answer records the call of the method ctx is serving and answers it, as
// a Resp: FailWith's error, else the method's Handle or Answer, else its
// empty response with the recorder's defaults.
func Answer[Resp proto.Message](ctx context.Context, r *Recorder, req proto.Message) (Resp, error) {
	var zero Resp
	h, err := r.record(ctx, req)
	switch {
	case err != nil:
		return zero, err
	case h != nil:
		resp, err := h(req)
		if err != nil {
			return zero, err
		}
		return resp.(Resp), nil
	}
	resp := zero.ProtoReflect().New()
	if r.defaults != nil {
		r.defaults(resp)
	}
	return resp.Interface().(Resp), nil
}

// RequireEveryMethod calls each unary method of services over conn with an
// empty request and requires that a fake recorded it under its name and
// did not leave it Unimplemented: a new RPC cannot fall through unnoticed.
// It returns how many methods it called.
func RequireEveryMethod(t testing.TB, conn grpc.ClientConnInterface, r *Recorder, services ...protoreflect.ServiceDescriptor) int {
	t.Helper()
	newMessage := func(md protoreflect.MessageDescriptor) proto.Message {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
		if err != nil {
			t.Fatalf("no type %s: %v", md.FullName(), err)
		}
		return mt.New().Interface()
	}
	called := 0
	for _, sd := range services {
		methods := sd.Methods()
		for i := range methods.Len() {
			m := methods.Get(i)
			if m.IsStreamingClient() || m.IsStreamingServer() {
				continue
			}
			before := len(r.Calls(string(m.Name())))
			err := conn.Invoke(context.Background(), "/"+string(sd.FullName())+"/"+string(m.Name()), newMessage(m.Input()), newMessage(m.Output()))
			if status.Code(err) == codes.Unimplemented {
				t.Errorf("%s is not implemented by the fake: %v", m.Name(), err)
			}
			if got := len(r.Calls(string(m.Name()))); got != before+1 {
				t.Errorf("%s: %d calls recorded under its name, want %d", m.Name(), got, before+1)
			}
			called++
		}
	}
	return called
}
