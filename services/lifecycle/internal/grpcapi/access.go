package grpcapi

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// The gRPC server's interceptor has already let the call's principal
// reach the method (its zimmer.access.v1 option); what it cannot know is
// which session a request names. A session credential reaches the methods
// scoped "self" for its own session only, reads any session only with the
// sessions.read scope (principal.MayRead), and acts as its own session: a
// different acting_session_id is refused (principal.ActingAs).
// Its writes are re-checked against its revocation inside their
// transaction (store).

// sessionCaller returns the call's principal when it is a session
// credential.
func sessionCaller(ctx context.Context) (principal.Principal, bool) {
	p, ok := principal.FromContext(ctx)
	return p, ok && p.Kind == principal.Session
}

// revoker names who revokes a credential, as every later caller with it
// is told ("credential revoked: admin key …abcd revoked it").
func revoker(ctx context.Context) string {
	if by := auditBy(ctx); by != "" {
		return by
	}
	return "an unrecorded caller"
}

// ownRef is the session a "self"-scoped write acts on: for a session
// credential, its own session only, and by the id ref resolved to, so the
// session checked is the session written; for anyone else ref as given.
func (s *Server) ownRef(ctx context.Context, ref string) (string, error) {
	return s.checkedRef(ctx, ref, principal.Principal.MayActOn)
}

// readableRef is the session a "self"-scoped read reads: what
// principal.MayRead allows (its own, or any with the sessions.read scope),
// by the id ref resolved to; for anyone but a session credential ref as
// given.
func (s *Server) readableRef(ctx context.Context, ref string) (string, error) {
	return s.checkedRef(ctx, ref, principal.Principal.MayRead)
}

// checkedRef resolves ref for a session credential and refuses it the
// session unless may allows it.
func (s *Server) checkedRef(ctx context.Context, ref string, may func(principal.Principal, int64) bool) (string, error) {
	p, ok := sessionCaller(ctx)
	if !ok {
		return ref, nil
	}
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return "", err
	}
	id := r.ID
	if r.Slug != "" {
		sess, err := s.sessions.Get.Handle(ctx, ref)
		if err != nil {
			return "", err
		}
		id = sess.ID
	}
	if !may(p, id) {
		return "", domain.NotYourSession(p.SessionID, r)
	}
	return strconv.FormatInt(id, 10), nil
}

// mayRead refuses a session credential the session it read, unless it is
// its own or the credential reads every session.
func mayRead(ctx context.Context, sess domain.Session) error {
	p, ok := sessionCaller(ctx)
	if !ok || p.MayRead(sess.ID) {
		return nil
	}
	return domain.NotYourSession(p.SessionID, domain.SessionRef{ID: sess.ID})
}

// actingSession is the session a call declares it acts for: a session
// credential's own, which a different declaration cannot change (it is
// refused); for anyone else what it declared.
func actingSession(ctx context.Context, declared *int64) (*int64, error) {
	p, ok := sessionCaller(ctx)
	if !ok {
		return declared, nil
	}
	var named int64
	if declared != nil {
		named = *declared
	}
	own, err := p.ActingAs(named)
	if err != nil {
		return nil, &domain.ForbiddenError{Reason: err.Error()}
	}
	return &own, nil
}

// childOf is the parent of a session a call creates: a session credential
// starts children of its own session only.
func childOf(ctx context.Context, declared *int64) (*int64, error) {
	p, ok := sessionCaller(ctx)
	if !ok {
		return declared, nil
	}
	if declared != nil && *declared != p.SessionID {
		return nil, &domain.ForbiddenError{Reason: fmt.Sprintf(
			"session #%d's credential starts only children of its own session; parent_session_id %d names another (leave it out)", p.SessionID, *declared)}
	}
	own := p.SessionID
	return &own, nil
}

// credentialRefused is the status of a refused session credential:
// Unauthenticated in lifecycle's words, marked with an ErrorInfo so the
// gateway tells it from a failure of its own call (a misconfigured
// internal token is Unauthenticated too).
func credentialRefused(err error) error {
	st := status.New(codes.Unauthenticated, err.Error())
	if marked, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: rules.CredentialRefusedReason, Domain: rules.ErrorDomain}); derr == nil {
		st = marked
	}
	return st.Err()
}

func timestampOrNil(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
