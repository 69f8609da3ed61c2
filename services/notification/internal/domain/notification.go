package domain

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Type is what a notification is about.
type Type string

// The notification types.
const (
	// TypeNeedsInput: a session paused and waits for its operator (the
	// debounced push of a pause).
	TypeNeedsInput Type = "needs_input"
	// TypeFailure: a session failed; its retries are spent.
	TypeFailure Type = "failure"
	// TypeElicitation: an MCP server waits on the operator's answer.
	TypeElicitation Type = "elicitation"
	// TypeAgentMessage: an agent (or an operator's program) said something
	// to the operator (SendPushNotification).
	TypeAgentMessage Type = "agent_message"
)

// Types are the types a notification may have, in the order messages list them.
var Types = []Type{TypeNeedsInput, TypeFailure, TypeElicitation, TypeAgentMessage}

// Limits on a notification's text. Generated titles and bodies are cut to
// them; SendPushNotification refuses longer ones.
const (
	MaxTitleChars = 200
	MaxBodyChars  = 4_000
)

var (
	// ErrNotFound: no notification has the id asked for.
	ErrNotFound = errors.New("notification not found")
	// ErrSessionGone: lifecycle knows no such session any more (it was
	// deleted), so nothing about it is pushed.
	ErrSessionGone = errors.New("lifecycle knows no such session")
)

// Notification is one entry of the operator's inbox.
type Notification struct {
	ID   int64
	Type Type
	// SessionID is the session it is about; 0 for none.
	SessionID int64
	Title     string
	Body      string
	// Marker is, for needs_input, the session's needs_input_count of the
	// pause it reports: one notification per pause.
	Marker int64
	// DedupKey makes a producer that may run twice (a redelivered effect)
	// create one notification: "failure/<event id>". Empty for the others
	// (a needs_input notification is one per session and marker).
	DedupKey  string
	CreatedAt time.Time
	// OccurredAt is when what it reports happened (the failure, the
	// message; for a pause its marker says which): a resume stales what
	// happened before it, however late the notification was created.
	// Zero means CreatedAt.
	OccurredAt  time.Time
	ReadAt      *time.Time
	DismissedAt *time.Time
	// StaleAt: the session moved on (it resumed), so the notification no
	// longer describes it.
	StaleAt *time.Time
	// PushedAt: when the push reached a sink; nil until then.
	PushedAt *time.Time
}

// PushTitle is the title a sink shows for n. Titles Zimmer writes name
// their session already; an agent's message gets its session put in front,
// since a phone's lock screen shows the title alone.
func (n Notification) PushTitle() string {
	if n.Type == TypeAgentMessage && n.SessionID > 0 {
		return clip(fmt.Sprintf("Session %d: %s", n.SessionID, n.Title), MaxTitleChars)
	}
	return n.Title
}

// PushDedupKey identifies n's push across sink retries, so a receiver can
// drop a delivery that had in fact arrived.
func (n Notification) PushDedupKey() string { return fmt.Sprintf("notification/%d", n.ID) }

// Session is what notification needs to know about a session: lifecycle's
// snapshot on an effect, or its answer to GetSession.
type Session struct {
	ID     int64
	Title  string
	Status string
	// NeedsInputCount is the debounce marker: every pause increments it.
	NeedsInputCount int64
	// PushNotifications is the operator's opt-in to the needs-input push.
	PushNotifications bool
}

// name is how a text refers to s: its id, and its title when it has one.
func (s Session) name() string {
	if t := strings.TrimSpace(s.Title); t != "" {
		return fmt.Sprintf("Session %d (%q)", s.ID, t)
	}
	return fmt.Sprintf("Session %d", s.ID)
}

// headline is "Session 12 <what>: <title>", or without the title when there
// is none.
func (s Session) headline(what string) string {
	h := fmt.Sprintf("Session %d %s", s.ID, what)
	if t := strings.TrimSpace(s.Title); t != "" {
		h += ": " + t
	}
	return clip(h, MaxTitleChars)
}

// NeedsInputRefusal says why the pause with marker no longer earns a push
// when its debounce ends, or "" when it does: the session must still be in
// needs_input, from that same pause (its needs_input_count is still
// marker: any resume and pause since moved it on), and its operator must
// want needs-input pushes.
func NeedsInputRefusal(s Session, marker int64) string {
	switch {
	case s.Status != rules.StatusNeedsInput:
		return fmt.Sprintf("session %d is %s now, no longer waiting for input", s.ID, s.Status)
	case s.NeedsInputCount != marker:
		return fmt.Sprintf("session %d paused again since (needs_input_count %d, this push was for %d); the later pause's own push covers it",
			s.ID, s.NeedsInputCount, marker)
	case !s.PushNotifications:
		return fmt.Sprintf("session %d has push_notifications off", s.ID)
	}
	return ""
}

// StaleOnResume is what a resume of a session stales (the spec's
// mark_notifications_stale): every notification of that session not
// dismissed or stale already, read or not, of every type — a failure's
// news is over once the session runs again — about what happened before
// the resume: a needs_input one of a pause up to NeedsInputCount (the
// session's count at the resume), any other whose OccurredAt is not after
// ResumedAt. The bounds keep a resume's effect delivered late from staling
// news of the session's next pause or next failure.
type StaleOnResume struct {
	SessionID       int64
	NeedsInputCount int64
	ResumedAt       time.Time
}

// Stales reports whether r stales n.
func (r StaleOnResume) Stales(n Notification) bool {
	if n.SessionID != r.SessionID || n.DismissedAt != nil || n.StaleAt != nil {
		return false
	}
	if n.Type == TypeNeedsInput {
		return n.Marker <= r.NeedsInputCount
	}
	return !n.ReportedAt().After(r.ResumedAt)
}

// ReportedAt is when what n reports happened (OccurredAt, else CreatedAt).
func (n Notification) ReportedAt() time.Time {
	if n.OccurredAt.IsZero() {
		return n.CreatedAt
	}
	return n.OccurredAt
}

// NeedsInput is the notification of s's pause marker, created at now.
func NeedsInput(s Session, marker int64, now time.Time) Notification {
	return Notification{
		Type:      TypeNeedsInput,
		SessionID: s.ID,
		Title:     s.headline("needs your input"),
		Body: clip(s.name()+" finished its turn and is waiting for you. "+
			"Send it a follow-up to continue, or archive it if its work is done.", MaxBodyChars),
		Marker:    marker,
		CreatedAt: now,
	}
}

// Failure is the notification of s's failure, which lifecycle reported as
// the effect eventID, created at now. Its dedup key makes a redelivered
// effect create nothing more.
func Failure(s Session, reason, eventID string, now time.Time) Notification {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "no failure reason was recorded"
	}
	reason = strings.TrimRight(reason, ".")
	return Notification{
		Type:      TypeFailure,
		SessionID: s.ID,
		Title:     s.headline("failed"),
		Body: clip(s.name()+" failed and will not retry on its own: "+reason+". "+
			"Read its timeline, then restart it to try again, or archive it.", MaxBodyChars),
		DedupKey:  FailureDedupKey(eventID),
		CreatedAt: now,
	}
}

// FailureDedupKey is the dedup key of the failure notification lifecycle's
// effect eventID creates.
func FailureDedupKey(eventID string) string { return "failure/" + eventID }

// AgentMessage is a push an agent (or an operator's program) sends its
// operator.
type AgentMessage struct {
	// SessionID is the session it is from, 0 for none.
	SessionID int64
	Title     string
	Body      string
}

// Validate checks the message and reports every problem at once.
func (m AgentMessage) Validate() error {
	var vs validation.Violations
	switch c := utf8.RuneCountInString(m.Title); {
	case strings.TrimSpace(m.Title) == "":
		vs.Add("title", "is required: one line the operator reads first")
	case c > MaxTitleChars:
		vs.Add("title", "is %d characters; the limit is %d — put the rest in body", c, MaxTitleChars)
	default:
		if p := validation.TextProblem(m.Title); p != "" {
			vs.Add("title", "%s", p)
		}
	}
	if c := utf8.RuneCountInString(m.Body); c > MaxBodyChars {
		vs.Add("body", "is %d characters; the limit is %d", c, MaxBodyChars)
	} else if p := validation.TextProblem(m.Body); p != "" {
		vs.Add("body", "%s", p)
	}
	if m.SessionID < 0 {
		vs.Add("session_id", "is %d; use the session's id, or 0 for none", m.SessionID)
	}
	return vs.Err()
}

// Notification is the agent_message notification of m, created at now.
func (m AgentMessage) Notification(now time.Time) Notification {
	return Notification{Type: TypeAgentMessage, SessionID: m.SessionID, Title: m.Title, Body: m.Body, CreatedAt: now}
}

// Filter selects one page of the inbox, newest first.
type Filter struct {
	// Unread: only notifications not read yet.
	Unread bool
	// Type: only this type ("" for all).
	Type Type
	// SessionID: only this session's (0 for all).
	SessionID int64
	// IncludeDismissed: dismissed ones too (hidden by default).
	IncludeDismissed bool
	// Limit is the page size.
	Limit int
	// BeforeID continues a listing: only ids below it (0 starts at the newest).
	BeforeID int64
}

// NewFilter validates a listing request and reports every problem at once.
func NewFilter(unread bool, typ string, sessionID int64, includeDismissed bool, pageSize int, pageToken string) (Filter, error) {
	f := Filter{Unread: unread, SessionID: sessionID, IncludeDismissed: includeDismissed}
	var vs validation.Violations
	if typ != "" {
		t, ok := ParseType(typ)
		if !ok {
			vs.Add("type", "is %q; use one of %s, or leave it out for every type", typ, typeList())
		}
		f.Type = t
	}
	if sessionID < 0 {
		vs.Add("session_id", "is %d; use the session's id, or 0 for every session", sessionID)
	}
	if limit, err := PageSize(pageSize); err != nil {
		var verr *validation.Error
		if errors.As(err, &verr) {
			vs = append(vs, verr.Violations...)
		}
	} else {
		f.Limit = limit
	}
	before, err := parsePageToken(pageToken)
	if err != nil {
		vs.Add("page_token", "is not a page token of this listing; pass next_page_token as it was returned, or leave it out to start")
	}
	f.BeforeID = before
	return f, vs.Err()
}

// ParseType reads a type's name.
func ParseType(s string) (Type, bool) {
	for _, t := range Types {
		if string(t) == s {
			return t, true
		}
	}
	return "", false
}

func typeList() string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// Page is one page of the inbox.
type Page struct {
	Notifications []Notification
	// NextPageToken continues the listing; "" on the last page.
	NextPageToken string
	// UnreadCount counts the unread, undismissed notifications the filter's
	// type and session select, across every page.
	UnreadCount int
}

// NewPage makes the page of f from rows, which holds up to f.Limit+1
// notifications newest first: one more than fits says another page follows.
func NewPage(f Filter, rows []Notification, unread int) Page {
	p := Page{Notifications: rows, UnreadCount: unread}
	if len(rows) > f.Limit {
		p.Notifications = rows[:f.Limit]
		p.NextPageToken = pageToken(p.Notifications[f.Limit-1].ID)
	}
	return p
}

const pageTokenPrefix = "before:"

func pageToken(beforeID int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(pageTokenPrefix + strconv.FormatInt(beforeID, 10)))
}

func parsePageToken(token string) (int64, error) {
	if token == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, err
	}
	rest, ok := strings.CutPrefix(string(b), pageTokenPrefix)
	if !ok {
		return 0, errors.New("no prefix")
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || id < 1 {
		return 0, errors.New("bad id")
	}
	return id, nil
}

// clip cuts s to at most n characters, ending it with "…" when cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
