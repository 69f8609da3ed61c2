// Package supervisor serves the operator-only surface (/supervisor/...):
// today the users roster. It sits behind its own HTTP Basic realm, never
// an API key or a session credential: the roster is the authority on who
// counts as a human, so nothing an agent holds may add a Slack ID or edit
// a person and so manufacture human authorship.
//
// The roster's gRPC methods are internal (docs/security.md): the
// supervisor calls them as the gateway itself, with the internal token and
// no forwarded principal (its requests carry none), and lineage refuses
// them to anyone else, the gateway relaying a client included.
//
// There are no human message routes here, and none anywhere else a
// production build serves (package testboundary is enabled in test builds
// only). A message is recorded by the boundary the human spoke through, as
// it delivers what they said (the web UI's new session or follow-up,
// Slack); an operator typing "Tadas said X" into a form would be a create
// path for evidence, which the spec forbids on every surface.
package supervisor

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	"github.com/zimmerhq/zimmer/gateway/internal/rest"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

const (
	// Realm is the Basic realm the browser prompts for.
	Realm = "zimmer-supervisor"
	// DisabledMessage is the 503 text when no credentials are configured.
	DisabledMessage = "supervisor disabled: set ZIMMER_SUPERVISOR_USER and ZIMMER_SUPERVISOR_PASSWORD on the gateway"
	// UnauthorizedMessage is the 401 text.
	UnauthorizedMessage = "supervisor credentials required: HTTP Basic with ZIMMER_SUPERVISOR_USER and ZIMMER_SUPERVISOR_PASSWORD (the fleet API key does not open this surface)"
	// MaxBodyBytes bounds a roster edit.
	MaxBodyBytes = 64 << 10
	callTimeout  = 10 * time.Second
)

// Credentials are the operator's Basic credentials. Both empty disables the
// surface.
type Credentials struct {
	User     string
	Password string
}

// Enabled reports whether both are set.
func (c Credentials) Enabled() bool { return c.User != "" && c.Password != "" }

// Routes lists the surface's routes, for the test that walks every public
// surface; none of them touches human messages.
var Routes = []string{
	"GET /supervisor/users",
	"POST /supervisor/users",
	"PATCH /supervisor/users/{key}",
}

// NewHandler returns the supervisor surface over the provenance service.
func NewHandler(users lineagev1.ProvenanceServiceClient, creds Credentials, logger *slog.Logger) http.Handler {
	h := &handler{users: users, logger: logger}
	mux := http.NewServeMux()
	mux.HandleFunc(Routes[0], h.list)
	mux.HandleFunc(Routes[1], h.create)
	mux.HandleFunc(Routes[2], h.update)
	mux.HandleFunc("/supervisor/", func(w http.ResponseWriter, r *http.Request) {
		jsonhttp.WriteError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s; the supervisor surface has %s",
			r.Method, r.URL.Path, strings.Join(Routes, ", ")))
	})
	return requireBasic(creds, mux)
}

// requireBasic lets a request through only with the operator's Basic
// credentials, compared in constant time (digests, so not even the length
// leaks).
func requireBasic(creds Credentials, next http.Handler) http.Handler {
	wantUser, wantPass := sha256.Sum256([]byte(creds.User)), sha256.Sum256([]byte(creds.Password))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !creds.Enabled() {
			jsonhttp.WriteError(w, http.StatusServiceUnavailable, DisabledMessage)
			return
		}
		user, pass, ok := r.BasicAuth()
		gotUser, gotPass := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
		userOK := subtle.ConstantTimeCompare(gotUser[:], wantUser[:])
		passOK := subtle.ConstantTimeCompare(gotPass[:], wantPass[:])
		if !ok || userOK&passOK != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="`+Realm+`", charset="UTF-8"`)
			jsonhttp.WriteError(w, http.StatusUnauthorized, UnauthorizedMessage)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type handler struct {
	users  lineagev1.ProvenanceServiceClient
	logger *slog.Logger
}

// user is the roster row as JSON.
type user struct {
	Key          string   `json:"key"`
	DisplayName  string   `json:"display_name"`
	Email        string   `json:"email"`
	SlackUserIDs []string `json:"slack_user_ids"`
	Notes        string   `json:"notes"`
	CreatedAt    string   `json:"created_at,omitempty"`
	UpdatedAt    string   `json:"updated_at,omitempty"`
}

func fromProto(u *lineagev1.User) user {
	out := user{Key: u.GetKey(), DisplayName: u.GetDisplayName(), Email: u.GetEmail(), SlackUserIDs: u.GetSlackUserIds(), Notes: u.GetNotes()}
	if out.SlackUserIDs == nil {
		out.SlackUserIDs = []string{}
	}
	if u.GetCreatedAt() != nil {
		out.CreatedAt = u.GetCreatedAt().AsTime().UTC().Format(time.RFC3339Nano)
	}
	if u.GetUpdatedAt() != nil {
		out.UpdatedAt = u.GetUpdatedAt().AsTime().UTC().Format(time.RFC3339Nano)
	}
	return out
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	resp, err := h.users.ListUsers(ctx, &lineagev1.ListUsersRequest{})
	if err != nil {
		h.fail(ctx, w, r, err)
		return
	}
	users := make([]user, 0, len(resp.GetUsers()))
	for _, u := range resp.GetUsers() {
		users = append(users, fromProto(u))
	}
	jsonhttp.Write(w, http.StatusOK, map[string]any{"users": users})
}

func (h *handler) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Key          string   `json:"key"`
		DisplayName  string   `json:"display_name"`
		Email        string   `json:"email"`
		SlackUserIDs []string `json:"slack_user_ids"`
		Notes        string   `json:"notes"`
	}
	if !decode(w, r, &in, `{"key": "sam", "display_name": "Sam", "email": "", "slack_user_ids": [], "notes": ""}`) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	resp, err := h.users.CreateUser(ctx, &lineagev1.CreateUserRequest{
		Key: in.Key, DisplayName: in.DisplayName, Email: in.Email, SlackUserIds: in.SlackUserIDs, Notes: in.Notes,
	})
	if err != nil {
		h.fail(ctx, w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusCreated, map[string]any{"user": fromProto(resp.GetUser())})
}

func (h *handler) update(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Key          *string   `json:"key"`
		DisplayName  *string   `json:"display_name"`
		Email        *string   `json:"email"`
		SlackUserIDs *[]string `json:"slack_user_ids"`
		Notes        *string   `json:"notes"`
	}
	if !decode(w, r, &in, `{"display_name": "...", "email": "...", "slack_user_ids": ["U012AB3CD"], "notes": "..."}`) {
		return
	}
	key := r.PathValue("key")
	if msg := rest.BadParam("path parameter", "key", key); msg != "" {
		jsonhttp.WriteError(w, http.StatusBadRequest, msg)
		return
	}
	if in.Key != nil && *in.Key != key {
		jsonhttp.WriteProblem(w, http.StatusUnprocessableEntity, jsonhttp.KindValidation,
			"key is immutable: renaming would orphan every message the human authored; create a new user instead")
		return
	}
	req := &lineagev1.UpdateUserRequest{Key: key, DisplayName: in.DisplayName, Email: in.Email, Notes: in.Notes}
	if in.SlackUserIDs != nil {
		req.SlackUserIds, req.SetSlackUserIds = *in.SlackUserIDs, true
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	resp, err := h.users.UpdateUser(ctx, req)
	if err != nil {
		h.fail(ctx, w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, map[string]any{"user": fromProto(resp.GetUser())})
}

// decode reads a roster edit into v, or answers 400 (or 413) itself.
func decode(w http.ResponseWriter, r *http.Request, v any, example string) bool {
	return jsonhttp.Decode(w, r, v, MaxBodyBytes, example)
}

func (h *handler) fail(ctx context.Context, w http.ResponseWriter, r *http.Request, err error) {
	p := grpcerr.From("lineage", err)
	if p.Internal() {
		h.logger.ErrorContext(ctx, "supervisor call failed", "method", r.Method, "path", r.URL.Path, "code", p.Code.String(), "error", err)
	}
	jsonhttp.WriteProblem(w, p.HTTPStatus, p.Kind, p.Message, p.Messages...)
}
