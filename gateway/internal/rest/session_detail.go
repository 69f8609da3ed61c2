package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	"github.com/zimmerhq/zimmer/gateway/internal/wirejson"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// SessionDetailPattern is the one route the session detail composition
// answers; it takes precedence over grpc-gateway's route for the same path
// (the server registers it on its own mux, more specific than /api/v1/).
const SessionDetailPattern = "GET /api/v1/sessions/{id}"

// LineageTimeout and QueueTimeout bound the provenance and the queue parts
// of the composition, so a slow lineage or queue cannot hold up the session
// itself.
const (
	LineageTimeout = 5 * time.Second
	QueueTimeout   = 5 * time.Second
)

// DegradedHeader is set, once per service, when a service of the
// composition could not be asked. Lineage: session_hierarchy and
// human_messages are then null — unknown — which a client must never read
// as "no human asked for this". Queue: enqueued_messages is then empty
// without meaning the queue is.
const DegradedHeader = "X-Zimmer-Degraded"

// queueDegraded is the DegradedHeader value when the queue could not be
// asked.
const queueDegraded = "queue: enqueued_messages is unknown (left empty), not an empty queue"

// NewSessionDetail answers GET /api/v1/sessions/{id} with
// {"session", "status_summary", "enqueued_messages", "session_hierarchy",
// "human_messages"} (status_summary the session's, null until a fork wrote
// one):
// the session from lifecycle, its queue's pending and undelivered messages
// from the queue (DetailEnqueuedMessages), and from lineage the hierarchy
// and the human messages gathered across it (a bare array, each with its
// origin). The last three are top-level keys, never inside session, so
// session has one shape on every response; session and enqueued_messages
// are GetSessionResponse's, which lifecycle answers without the queue.
//
// Lifecycle failing fails the request, in the API's error format. Lineage
// or the queue failing does not: the answer is 200 with the DegradedHeader
// naming the service, because the session itself is known and a detail page
// without provenance beats no page. Lineage's keys are then null (not [] or
// {}), keeping "unknown" distinguishable from "nobody said anything";
// enqueued_messages is then [], as GetSessionResponse cannot say null.
func NewSessionDetail(lifecycle lifecyclev1.LifecycleServiceClient, provenance lineagev1.ProvenanceServiceClient,
	queue queuev1.QueueServiceClient, logger *slog.Logger,
) http.Handler {
	return &sessionDetail{lifecycle: lifecycle, provenance: provenance, queue: queue, logger: logger, marshaler: wirejson.NewMarshaler()}
}

type sessionDetail struct {
	lifecycle  lifecyclev1.LifecycleServiceClient
	provenance lineagev1.ProvenanceServiceClient
	queue      queuev1.QueueServiceClient
	logger     *slog.Logger
	marshaler  *wirejson.Marshaler
}

// DetailEnqueuedMessages are the queued messages a session's detail shows
// (REST and MCP get_session): the ones still to be delivered (pending,
// processing), in delivery order, then the undelivered ones — accepted
// and never delivered, retired when the session was archived. Sent ones
// are history, read from the queue's own list. A queue that cannot be
// asked is logged and shows nothing (ok false): the session read never
// fails for it.
func DetailEnqueuedMessages(ctx context.Context, queue queuev1.QueueServiceClient, sessionID int64, logger *slog.Logger) (_ []*queuev1.EnqueuedMessage, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, QueueTimeout)
	defer cancel()
	out := []*queuev1.EnqueuedMessage{}
	for page := int32(1); ; page++ {
		resp, err := queue.ListEnqueuedMessages(ctx, &queuev1.ListEnqueuedMessagesRequest{
			SessionId: strconv.FormatInt(sessionID, 10), Status: []string{StatusPending, StatusProcessing, StatusUndelivered},
			Page: page, PerPage: rules.MaxPerPage,
		})
		if err != nil {
			logger.WarnContext(ctx, "session detail without its queued messages: the queue failed", "session_id", sessionID, "error", err)
			return []*queuev1.EnqueuedMessage{}, false
		}
		out = append(out, resp.GetEnqueuedMessages()...)
		if page >= resp.GetPagination().GetTotalPages() || page >= MaxDetailQueuePages {
			return out, true
		}
	}
}

// MaxDetailQueuePages bounds how many pages of a queue a session's detail
// reads (rules.MaxPerPage each), so a runaway queue cannot hold it up.
const MaxDetailQueuePages = 10

// The statuses of a queued message the detail shows (the queue's words).
const (
	StatusPending     = "pending"
	StatusProcessing  = "processing"
	StatusUndelivered = "undelivered"
)

// SessionDetailJSON is the body of GET /api/v1/sessions/{id}. `make proto`
// documents the route from this type (gateway/internal/openapidoc), so the
// published contract is the shape written here.
type SessionDetailJSON struct {
	Session          *lifecyclev1.Session       `json:"session" doc:"The session, as every other route answers it."`
	EnqueuedMessages []*queuev1.EnqueuedMessage `json:"enqueued_messages" doc:"The messages queued for the session that are not delivered: pending and processing ones in delivery order (position 1 is sent first), then the undelivered ones — accepted and never delivered (status undelivered, undelivered_at set, undelivered_reason saying why: the session was archived or deleted while they were queued, or one could never be a turn). Sent messages are listed by GET /api/v1/sessions/{session_id}/enqueued_messages. Empty when the queue could not be asked (the X-Zimmer-Degraded header says so)."`
	// Nil (null) when lineage could not be asked: unknown, not empty.
	SessionHierarchy *lineagev1.SessionHierarchy `json:"session_hierarchy" nullable:"true" doc:"The sessions this one came from, its siblings and uncles. Null when lineage could not be asked (the X-Zimmer-Degraded header says so): unknown, not empty."`
	// Nil (null) when unknown; empty ([]) when nobody said anything.
	HumanMessages []HumanMessageJSON `json:"human_messages" nullable:"true" doc:"The newest 25 human messages recorded anywhere in the hierarchy, oldest first (the conversation in the order it was said), each with its origin: here (said to this session) or elsewhere (context from another session of the hierarchy). [] when there are none; null when lineage could not be asked: unknown, not empty."`
	// The session's own status_summary, beside it as the original answers
	// it (the same value: lifecycle's, never composed here); nil (null)
	// until a fork wrote one.
	StatusSummary *lifecyclev1.StatusSummary `json:"status_summary" nullable:"true" doc:"The session's status summary, beside session as the original answers it (the same object as session.status_summary): text, generated_at, the transcript_position it covers, the fork_session_id that wrote it, and failure when a later fork failed. Null until a status-summary fork of the session has ended."`
}

// HumanMessageJSON is one entry of human_messages.
type HumanMessageJSON struct {
	ID                  int64          `json:"id"`
	Origin              string         `json:"origin" doc:"here: a human said it to this session; elsewhere: to another session of the hierarchy."`
	Author              string         `json:"author" doc:"The roster key of the human who wrote it."`
	AuthorDisplayName   *string        `json:"author_display_name" doc:"The author's name, or null when the key no longer resolves."`
	EntryPoint          string         `json:"entry_point" doc:"Where the message entered Zimmer, e.g. web_ui.follow_up or slack.dm."`
	Channel             string         `json:"channel" doc:"The medium it arrived through: web_ui or slack."`
	ChannelLabel        string         `json:"channel_label" doc:"Where it was said, for a reader: Zimmer web UI or Slack, followed for a message said elsewhere by the session it was said in, e.g. Slack (session #12)."`
	AuthoredInSessionID int64          `json:"authored_in_session_id"`
	AuthoredIn          AuthoredInJSON `json:"authored_in" doc:"The session it was said in, named as the hierarchy names it."`
	Content             string         `json:"content"`
	SlackPermalink      *string        `json:"slack_permalink"`
	OccurredAt          string         `json:"occurred_at" doc:"RFC 3339."`
}

// AuthoredInJSON is the session a human message was said in.
type AuthoredInJSON struct {
	ID    int64  `json:"id"`
	Label string `json:"label" doc:"The session's title, or Session #<id> when it has none."`
}

func (h *sessionDetail) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), CallTimeout)
	defer cancel()
	ref := r.PathValue("id")
	if msg := BadParam("path parameter", "session_id", ref); msg != "" {
		jsonhttp.WriteError(w, http.StatusBadRequest, msg)
		return
	}
	got, err := h.lifecycle.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: ref})
	if err != nil {
		p := grpcerr.FromCall(lifecyclev1.LifecycleService_GetSession_FullMethodName, err)
		if p.Internal() {
			h.logger.ErrorContext(ctx, "service call failed", "backend", "lifecycle", "method", r.Method, "path", r.URL.Path, "code", p.Code.String(), "error", err)
		}
		jsonhttp.WriteProblem(w, p.HTTPStatus, p.Kind, p.Message, p.Messages...)
		return
	}
	detail := SessionDetailJSON{Session: got.GetSession(), StatusSummary: got.GetSession().GetStatusSummary()}
	// The queue and lineage are asked side by side: neither waits for the
	// other.
	var queued bool
	asked := make(chan struct{})
	go func() {
		defer close(asked)
		detail.EnqueuedMessages, queued = DetailEnqueuedMessages(ctx, h.queue, got.GetSession().GetId(), h.logger)
	}()
	lctx, lcancel := context.WithTimeout(ctx, LineageTimeout)
	defer lcancel()
	prov, err := h.provenance.GetSessionProvenance(lctx, &lineagev1.GetSessionProvenanceRequest{SessionId: got.GetSession().GetId()})
	<-asked
	if err != nil {
		h.logger.WarnContext(ctx, "session detail without provenance: lineage failed", "session_id", got.GetSession().GetId(), "error", err)
		w.Header().Add(DegradedHeader, "lineage: session_hierarchy and human_messages are unknown (null), not empty")
	} else {
		detail.SessionHierarchy = prov.GetSessionHierarchy()
		if detail.SessionHierarchy == nil { // known: lineage answered
			detail.SessionHierarchy = &lineagev1.SessionHierarchy{}
		}
		detail.HumanMessages = HumanMessagesJSON(prov.GetHumanMessages())
	}
	if !queued {
		w.Header().Add(DegradedHeader, queueDegraded)
	}
	body, err := detail.encode(h.marshaler)
	if err != nil {
		h.logger.ErrorContext(ctx, "render session detail as JSON", "error", err)
		jsonhttp.WriteError(w, http.StatusInternalServerError, "internal error")
		return
	}
	jsonhttp.WriteRaw(w, http.StatusOK, body)
}

// encode writes d, its proto messages with m (numeric ids, as every route).
func (d SessionDetailJSON) encode(m *wirejson.Marshaler) ([]byte, error) {
	session, err := m.Marshal(d.Session)
	if err != nil {
		return nil, err
	}
	queued := make([]json.RawMessage, 0, len(d.EnqueuedMessages))
	for _, q := range d.EnqueuedMessages {
		b, err := m.Marshal(q)
		if err != nil {
			return nil, err
		}
		queued = append(queued, b)
	}
	hierarchy, messages, summary := json.RawMessage("null"), json.RawMessage("null"), json.RawMessage("null")
	if d.StatusSummary != nil {
		if summary, err = m.Marshal(d.StatusSummary); err != nil {
			return nil, err
		}
	}
	if d.SessionHierarchy != nil {
		if hierarchy, err = m.Marshal(d.SessionHierarchy); err != nil {
			return nil, err
		}
	}
	if d.HumanMessages != nil {
		if messages, err = encode(d.HumanMessages); err != nil {
			return nil, err
		}
	}
	return encode(struct {
		Session          json.RawMessage   `json:"session"`
		StatusSummary    json.RawMessage   `json:"status_summary"`
		EnqueuedMessages []json.RawMessage `json:"enqueued_messages"`
		SessionHierarchy json.RawMessage   `json:"session_hierarchy"`
		HumanMessages    json.RawMessage   `json:"human_messages"`
	}{session, summary, queued, hierarchy, messages}) // d's keys, each value already encoded
}

// HumanMessagesJSON is the REST form of msgs, in lineage's order (which
// chooses and orders what every surface shows); never nil, so an empty
// record is [].
func HumanMessagesJSON(msgs []*lineagev1.HumanMessage) []HumanMessageJSON {
	out := make([]HumanMessageJSON, 0, len(msgs))
	for _, m := range msgs {
		j := HumanMessageJSON{
			ID: m.GetId(), Origin: m.GetOrigin(), Author: m.GetAuthor(), EntryPoint: m.GetProvenance(),
			Channel: m.GetChannel(), ChannelLabel: m.GetChannelLabel(),
			AuthoredInSessionID: m.GetAuthoredInSessionId(), Content: m.GetContent(),
			AuthoredIn: AuthoredInJSON{ID: m.GetAuthoredInSessionId(), Label: m.GetAuthoredInLabel()},
		}
		if n := m.GetAuthorDisplayName(); n != "" {
			j.AuthorDisplayName = &n
		}
		if l := m.GetSlackPermalink(); l != "" {
			j.SlackPermalink = &l
		}
		if m.GetOccurredAt() != nil {
			j.OccurredAt = m.GetOccurredAt().AsTime().UTC().Format(time.RFC3339Nano)
		}
		out = append(out, j)
	}
	return out
}

// encode is compact JSON without HTML escaping, as protojson writes it.
func encode(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
