// Package runnerfake is a runner service for the gateway's tests: a
// grpcfake recorder answering GetTranscript with Transcript() and GetClone
// with the session's Clone unless the test set another answer, and
// streaming FollowTranscript from lines a test pushes. It keeps no
// transcript; the runner's own tests prove the real one.
package runnerfake

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcfake"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

// Now is the time of the default transcript.
var Now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Transcript is the default answer of GetTranscript: one ended turn of
// session #1 with one line.
func Transcript() *runnerv1.GetTranscriptResponse {
	return &runnerv1.GetTranscriptResponse{
		Turns: []*runnerv1.TranscriptTurn{{
			TurnId: "turn-1", SessionId: 1, StartedAt: timestamppb.New(Now), EndedAt: timestamppb.New(Now),
			Outcome: "exited 0", StoredLines: 1,
		}},
		Lines: []*runnerv1.TranscriptLine{Line(1, "hello")},
	}
}

// Line is line id of turn-1 of session #1, an assistant line saying text.
func Line(id int64, text string) *runnerv1.TranscriptLine {
	return &runnerv1.TranscriptLine{
		Id: id, SessionId: 1, TurnId: "turn-1", Seq: int32(id), Kind: "assistant", Type: "assistant",
		Text: text, Raw: `{"type":"assistant"}`, CreatedAt: timestamppb.New(Now),
	}
}

// Call is one call the fake received.
type Call = grpcfake.Call

// Server implements runnerv1.RunnerServiceServer as a recorder.
type Server struct {
	runnerv1.UnimplementedRunnerServiceServer
	*grpcfake.Recorder

	mu        sync.Mutex
	followers []chan *runnerv1.TranscriptLine
	followed  chan struct{} // closed and replaced when a follower arrives
}

// New returns a fake with no calls and the default answers.
func New() *Server {
	s := &Server{
		Recorder: grpcfake.NewRecorder(func(resp protoreflect.Message) {
			if r, ok := resp.Interface().(*runnerv1.GetTranscriptResponse); ok {
				proto.Merge(r, Transcript())
			}
		}),
		followed: make(chan struct{}),
	}
	s.Handle("GetClone", func(m proto.Message) (proto.Message, error) {
		ref := m.(*runnerv1.GetCloneRequest).GetSessionId()
		id, err := strconv.ParseInt(ref, 10, 64)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "session_id %q is not numeric", ref)
		}
		return &runnerv1.GetCloneResponse{Clone: Clone(id)}, nil
	})
	return s
}

// Register adds the fake to g.
func (s *Server) Register(g *grpc.Server) { runnerv1.RegisterRunnerServiceServer(g, s) }

// SetTranscript is what GetTranscript answers from now on.
func (s *Server) SetTranscript(resp *runnerv1.GetTranscriptResponse) {
	s.Answer("GetTranscript", resp, nil)
}

// Followers is how many FollowTranscript streams are open.
func (s *Server) Followers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.followers)
}

// Followed is closed once the next follower is streaming.
func (s *Server) Followed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.followed
}

// Push sends line to every open FollowTranscript stream; nil ends them, as
// a runner that stops does.
func (s *Server) Push(line *runnerv1.TranscriptLine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.followers {
		if line == nil {
			f <- nil
			continue
		}
		f <- proto.Clone(line).(*runnerv1.TranscriptLine)
	}
}

// GetTranscript implements runnerv1.RunnerServiceServer.
func (s *Server) GetTranscript(ctx context.Context, req *runnerv1.GetTranscriptRequest) (*runnerv1.GetTranscriptResponse, error) {
	return grpcfake.Answer[*runnerv1.GetTranscriptResponse](ctx, s.Recorder, req)
}

// InterruptTurn implements runnerv1.RunnerServiceServer.
func (s *Server) InterruptTurn(ctx context.Context, req *runnerv1.InterruptTurnRequest) (*runnerv1.InterruptTurnResponse, error) {
	return grpcfake.Answer[*runnerv1.InterruptTurnResponse](ctx, s.Recorder, req)
}

// AnswerElicitation implements runnerv1.RunnerServiceServer.
func (s *Server) AnswerElicitation(ctx context.Context, req *runnerv1.AnswerElicitationRequest) (*runnerv1.AnswerElicitationResponse, error) {
	return grpcfake.Answer[*runnerv1.AnswerElicitationResponse](ctx, s.Recorder, req)
}

// FollowTranscript implements runnerv1.RunnerServiceServer: it streams what
// Push sends until the caller goes away.
func (s *Server) FollowTranscript(req *runnerv1.FollowTranscriptRequest, stream grpc.ServerStreamingServer[runnerv1.FollowTranscriptResponse]) error {
	ctx := stream.Context()
	if err := s.Record(ctx, req); err != nil {
		return err
	}
	lines := make(chan *runnerv1.TranscriptLine, 100)
	s.mu.Lock()
	s.followers = append(s.followers, lines)
	close(s.followed)
	s.followed = make(chan struct{})
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.followers = slices.DeleteFunc(s.followers, func(c chan *runnerv1.TranscriptLine) bool { return c == lines })
		s.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case l := <-lines:
			if l == nil {
				return nil
			}
			if err := stream.Send(&runnerv1.FollowTranscriptResponse{Line: l}); err != nil {
				return err
			}
		}
	}
}

// Clone is what GetClone answers for session id: a preserved clone whose
// artifacts are kept until a day after Now.
func Clone(id int64) *runnerv1.Clone {
	return &runnerv1.Clone{
		SessionId: id, Node: "node-a", Path: "/srv/workspaces/" + strconv.FormatInt(id, 10), State: "preserved",
		TrashAfter: timestamppb.New(Now.Add(24 * time.Hour)), Note: "the clone's unpushed work is kept",
		Artifacts: &runnerv1.PreservedArtifacts{
			Dir: "/srv/workspaces/.preserved/" + strconv.FormatInt(id, 10), BundleBytes: 1024, PatchBytes: 2048,
		},
	}
}

// GetClone implements runnerv1.RunnerServiceServer.
func (s *Server) GetClone(ctx context.Context, req *runnerv1.GetCloneRequest) (*runnerv1.GetCloneResponse, error) {
	return grpcfake.Answer[*runnerv1.GetCloneResponse](ctx, s.Recorder, req)
}

// GetLatestTranscriptLines implements runnerv1.RunnerServiceServer.
func (s *Server) GetLatestTranscriptLines(ctx context.Context, req *runnerv1.GetLatestTranscriptLinesRequest) (*runnerv1.GetLatestTranscriptLinesResponse, error) {
	return grpcfake.Answer[*runnerv1.GetLatestTranscriptLinesResponse](ctx, s.Recorder, req)
}

// SearchTranscripts implements runnerv1.RunnerServiceServer.
func (s *Server) SearchTranscripts(ctx context.Context, req *runnerv1.SearchTranscriptsRequest) (*runnerv1.SearchTranscriptsResponse, error) {
	return grpcfake.Answer[*runnerv1.SearchTranscriptsResponse](ctx, s.Recorder, req)
}

// ListAgentAccounts implements runnerv1.RunnerServiceServer.
func (s *Server) ListAgentAccounts(ctx context.Context, req *runnerv1.ListAgentAccountsRequest) (*runnerv1.ListAgentAccountsResponse, error) {
	return grpcfake.Answer[*runnerv1.ListAgentAccountsResponse](ctx, s.Recorder, req)
}

// GetCosts implements runnerv1.RunnerServiceServer.
func (s *Server) GetCosts(ctx context.Context, req *runnerv1.GetCostsRequest) (*runnerv1.GetCostsResponse, error) {
	return grpcfake.Answer[*runnerv1.GetCostsResponse](ctx, s.Recorder, req)
}

// RecordMcpResponse implements runnerv1.RunnerServiceServer.
func (s *Server) RecordMcpResponse(ctx context.Context, req *runnerv1.RecordMcpResponseRequest) (*runnerv1.RecordMcpResponseResponse, error) {
	return grpcfake.Answer[*runnerv1.RecordMcpResponseResponse](ctx, s.Recorder, req)
}
