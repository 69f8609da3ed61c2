package grpcapi

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
)

// TranscriptStore is what the transcript methods read.
type TranscriptStore interface {
	transcript.Reader
	Page(ctx context.Context, q transcript.Query) (transcript.Page, error)
	// LatestLines returns the newest line of each of the sessions that has
	// one.
	LatestLines(ctx context.Context, sessionIDs []int64) ([]transcript.Line, error)
	// SearchSessions returns the sessions whose transcript holds query's
	// words as a phrase, newest match first, at most limit, and whether
	// more matched.
	SearchSessions(ctx context.Context, query string, limit int) ([]int64, bool, error)
}

// Transcript search's bounds (SearchTranscripts).
const (
	MaxSearchQueryChars = 200
	MaxSearchSessions   = 1000
)

// SearchTranscripts implements runnerv1.RunnerServiceServer: internal,
// lifecycle's ListSessions transcript filter.
func (s *Server) SearchTranscripts(ctx context.Context, req *runnerv1.SearchTranscriptsRequest) (*runnerv1.SearchTranscriptsResponse, error) {
	if s.transcripts.Store == nil {
		return nil, toStatus(refuse(codes.Unimplemented, "this runner keeps no transcripts"))
	}
	q, limit := strings.TrimSpace(req.GetQuery()), int(req.GetLimit())
	var vs validation.Violations
	switch {
	case utf8.RuneCountInString(q) > MaxSearchQueryChars:
		vs.Add("query", "search for at most %d characters (got %d)", MaxSearchQueryChars, utf8.RuneCountInString(q))
	case strings.IndexFunc(q, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0:
		vs.Add("query", "give at least one word to search the transcripts for")
	}
	if limit < 0 || limit > MaxSearchSessions {
		vs.Add("limit", "must be between 1 and %d, or 0 for %d (got %d)", MaxSearchSessions, MaxSearchSessions, limit)
	}
	if err := vs.Err(); err != nil {
		return nil, s.transcriptStatus(ctx, err)
	}
	if limit == 0 {
		limit = MaxSearchSessions
	}
	ids, more, err := s.transcripts.Store.SearchSessions(ctx, q, limit)
	if err != nil {
		return nil, s.transcriptStatus(ctx, err)
	}
	return &runnerv1.SearchTranscriptsResponse{SessionIds: ids, Truncated: more}, nil
}

// MaxLatestLines bounds the sessions one GetLatestTranscriptLines asks
// about.
const MaxLatestLines = 500

// GetLatestTranscriptLines implements runnerv1.RunnerServiceServer:
// internal, the console's dashboard cards.
func (s *Server) GetLatestTranscriptLines(ctx context.Context, req *runnerv1.GetLatestTranscriptLinesRequest) (*runnerv1.GetLatestTranscriptLinesResponse, error) {
	if s.transcripts.Store == nil {
		return nil, toStatus(refuse(codes.Unimplemented, "this runner keeps no transcripts"))
	}
	ids := req.GetSessionIds()
	var vs validation.Violations
	if len(ids) > MaxLatestLines {
		vs.Add("session_ids", "ask about at most %d sessions at once (got %d)", MaxLatestLines, len(ids))
	}
	for _, id := range ids {
		if id < 1 {
			vs.Add("session_ids", "%d is not a session id", id)
			break
		}
	}
	if err := vs.Err(); err != nil {
		return nil, s.transcriptStatus(ctx, err)
	}
	resp := &runnerv1.GetLatestTranscriptLinesResponse{}
	if len(ids) == 0 {
		return resp, nil
	}
	lines, err := s.transcripts.Store.LatestLines(ctx, ids)
	if err != nil {
		return nil, s.transcriptStatus(ctx, err)
	}
	for _, l := range lines {
		l.Raw, l.RawTruncated = "", false
		resp.Lines = append(resp.Lines, lineMessage(l))
	}
	return resp, nil
}

// Transcripts is what GetTranscript and FollowTranscript need: the store,
// the notifier the turns' Recorder wakes, and the follow's poll interval
// (transcript.DefaultPoll when zero).
type Transcripts struct {
	Store    TranscriptStore
	Notifier *transcript.Notifier
	Poll     time.Duration
	Logger   *slog.Logger
	// Stopping is closed when the service stops: every follow ends then
	// (cleanly: the client resumes after the last line it got), so an open
	// follow does not hold the server's graceful stop for its whole grace.
	Stopping <-chan struct{}
}

// WithTranscripts serves the transcript methods from t.
func (s *Server) WithTranscripts(t Transcripts) *Server {
	s.transcripts = t
	return s
}

// GetTranscript implements runnerv1.RunnerServiceServer.
func (s *Server) GetTranscript(ctx context.Context, req *runnerv1.GetTranscriptRequest) (*runnerv1.GetTranscriptResponse, error) {
	if s.transcripts.Store == nil {
		return nil, toStatus(refuse(codes.Unimplemented, "this runner keeps no transcripts"))
	}
	id, err := readableSession(ctx, req.GetSessionId())
	if err != nil {
		return nil, s.transcriptStatus(ctx, err)
	}
	var vs validation.Violations
	if req.GetFollow() {
		vs.Add("follow", "is served by the gateway's REST route as server-sent events; over gRPC call FollowTranscript")
	}
	size := int(req.GetPageSize())
	if size < 0 || size > transcript.MaxPageSize {
		vs.Add("page_size", "must be between 1 and %d lines (0 means %d)", transcript.MaxPageSize, transcript.DefaultPageSize)
	}
	after, terr := transcript.ParseToken(req.GetPageToken())
	if terr != nil {
		vs.Add("page_token", "%s", terr.Error())
	}
	if err := vs.Err(); err != nil {
		return nil, s.transcriptStatus(ctx, err)
	}
	page, err := s.transcripts.Store.Page(ctx, transcript.Query{SessionID: id, TurnID: req.GetTurn(), PageSize: size, After: after})
	if err != nil {
		return nil, s.transcriptStatus(ctx, err)
	}
	resp := &runnerv1.GetTranscriptResponse{NextPageToken: page.Next.Token()}
	for _, t := range page.Turns {
		resp.Turns = append(resp.Turns, turnMessage(t))
	}
	for _, l := range page.Lines {
		resp.Lines = append(resp.Lines, lineMessage(l))
	}
	return resp, nil
}

// FollowTranscript implements runnerv1.RunnerServiceServer: it streams
// until the caller goes away.
func (s *Server) FollowTranscript(req *runnerv1.FollowTranscriptRequest, stream grpc.ServerStreamingServer[runnerv1.FollowTranscriptResponse]) error {
	if s.transcripts.Store == nil {
		return toStatus(refuse(codes.Unimplemented, "this runner keeps no transcripts"))
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	if stopping := s.transcripts.Stopping; stopping != nil {
		go func() {
			select {
			case <-stopping:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	id, err := readableSession(ctx, req.GetSessionId())
	if err != nil {
		return s.transcriptStatus(ctx, err)
	}
	if req.GetAfterLineId() < 0 {
		return s.transcriptStatus(ctx, validation.Invalid("after_line_id", "must be a line id (0 starts at the newest turn)"))
	}
	err = transcript.Follow(ctx, s.transcripts.Store, s.transcripts.Notifier, id,
		transcript.FollowOptions{AfterID: req.GetAfterLineId(), Poll: s.transcripts.Poll},
		func(l transcript.Line) error {
			return stream.Send(&runnerv1.FollowTranscriptResponse{Line: lineMessage(l)})
		})
	if err != nil {
		return s.transcriptStatus(ctx, err)
	}
	return nil
}

// readableSession is the session a transcript request reads: a numeric id
// (slugs are lifecycle's; the gateway resolves them), which a session
// credential may read when it is its own or it holds sessions.read.
func readableSession(ctx context.Context, ref string) (int64, error) {
	ref = strings.TrimSpace(ref)
	id, err := strconv.ParseInt(ref, 10, 64)
	if err != nil || id < 1 {
		return 0, validation.Invalid("session_id", "must be a session's numeric id (the runner does not resolve slugs; lifecycle's GetSession does), got %q", ref)
	}
	if p, ok := principal.FromContext(ctx); ok && !p.MayRead(id) {
		return 0, refuse(codes.PermissionDenied,
			"session #%d's credential may read only its own session's transcript, not session #%d's; that needs the sessions.read scope or an operator key",
			p.SessionID, id)
	}
	return id, nil
}

// transcriptStatus is toStatus for the transcript methods; the stream's
// internal errors are logged here, as no interceptor logs a stream's.
func (s *Server) transcriptStatus(ctx context.Context, err error) error {
	if _, ok := status.FromError(err); ok {
		return err // the stream's own (the caller went away)
	}
	st := toStatus(err)
	if status.Code(st) == codes.Internal && s.transcripts.Logger != nil {
		s.transcripts.Logger.ErrorContext(ctx, "transcript request failed", "error", err)
	}
	return st
}

func turnMessage(t transcript.Turn) *runnerv1.TranscriptTurn {
	m := &runnerv1.TranscriptTurn{
		TurnId: t.TurnID, SessionId: t.SessionID, StartedAt: timestamppb.New(t.StartedAt),
		Outcome: t.Outcome, StoredLines: t.StoredLines, DroppedLines: t.DroppedLines,
	}
	if !t.EndedAt.IsZero() {
		m.EndedAt = timestamppb.New(t.EndedAt)
	}
	return m
}

func lineMessage(l transcript.Line) *runnerv1.TranscriptLine {
	return &runnerv1.TranscriptLine{
		Id: l.ID, SessionId: l.SessionID, TurnId: l.TurnID, Seq: l.Seq, Kind: l.Kind, Type: l.Type,
		Text: l.Text, Raw: l.Raw, RawTruncated: l.RawTruncated, IsError: l.IsError, CreatedAt: timestamppb.New(l.CreatedAt),
	}
}
