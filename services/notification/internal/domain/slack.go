package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/slackid"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// ChannelDM is a trigger's channel for direct messages to the app.
const ChannelDM = "dm"

// Bounds of a Slack trigger.
const (
	MaxAllowedUserIDs = 100
	MaxPrefixChars    = 100
)

// ErrTriggerNotFound: no Slack trigger has the id asked for.
var ErrTriggerNotFound = errors.New("slack trigger not found")

// SlackTrigger starts a session from a Slack message and takes the
// follow-ups in its thread. AllowedUserIDs answers "may fire this", never
// "who is this": the roster answers that, independently (the spec's "Who
// counts as a human").
type SlackTrigger struct {
	ID int64
	// Channel is a Slack channel ID, or ChannelDM.
	Channel        string
	AllowedUserIDs []string
	// Prefix, when set, must start the message; it is cut from the prompt.
	Prefix string
	// RequireMention: the message must mention the app's bot user.
	RequireMention bool
	GitRoot        string
	AgentRoot      string
	AgentRuntime   string
	CreatedAt      time.Time
}

// Normalize reads what an operator typed the way they meant it: fields
// trimmed, blank IDs dropped, repeats merged and sorted.
func (t *SlackTrigger) Normalize() {
	t.Channel = strings.TrimSpace(t.Channel)
	if strings.EqualFold(t.Channel, ChannelDM) {
		t.Channel = ChannelDM
	}
	ids := make([]string, 0, len(t.AllowedUserIDs))
	for _, id := range t.AllowedUserIDs {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	t.AllowedUserIDs = slices.Compact(ids)
	t.GitRoot = strings.TrimSpace(t.GitRoot)
	t.AgentRoot = strings.TrimSpace(t.AgentRoot)
	t.AgentRuntime = strings.TrimSpace(t.AgentRuntime)
}

// Validate reports every field that makes t unusable. The git root, agent
// root and runtime are bounded by the session's own limits; lifecycle
// checks the rest of what a session needs when the trigger fires.
func (t SlackTrigger) Validate() error {
	var vs validation.Violations
	switch {
	case t.Channel == "":
		vs.Add("channel", "is required: a Slack channel ID (e.g. C012AB3CD) or %q for direct messages to the app", ChannelDM)
	case t.Channel != ChannelDM && !slackid.Valid(t.Channel):
		vs.Add("channel", "%q is not a Slack channel ID (%s) or %q", t.Channel, slackid.Shape, ChannelDM)
	}
	switch {
	case len(t.AllowedUserIDs) == 0:
		vs.Add("allowed_user_ids", "at least one Slack user ID: a trigger anybody in the channel could fire would start sessions for anybody")
	case len(t.AllowedUserIDs) > MaxAllowedUserIDs:
		vs.Add("allowed_user_ids", "at most %d IDs", MaxAllowedUserIDs)
	}
	for _, id := range t.AllowedUserIDs {
		if !slackid.Valid(id) {
			vs.Add("allowed_user_ids", "%q is not a Slack user ID (%s)", id, slackid.Shape)
			break
		}
	}
	vs.Text("prefix", t.Prefix, MaxPrefixChars, "")
	vs.Content("git_root", t.GitRoot, rules.MaxGitRootChars, true, "the repository a started session's clone is made from", "")
	vs.Text("agent_root", t.AgentRoot, rules.MaxAgentRootChars, "")
	vs.Text("agent_runtime", t.AgentRuntime, rules.MaxAgentRuntimeChars, "")
	return vs.Err()
}

// Allows reports whether Slack user userID may fire t or follow up in its
// threads.
func (t SlackTrigger) Allows(userID string) bool { return slices.Contains(t.AllowedUserIDs, userID) }

// SlackMessage is a message event as the Events API delivers it, reduced
// to what Zimmer reads.
type SlackMessage struct {
	// EventID is the envelope's event_id, the delivery's identity.
	EventID string
	// BotUserIDs are the app's own users the envelope's authorizations
	// name: a mention of one is a mention of the app.
	BotUserIDs []string
	Type       string
	Subtype    string
	// BotID is set on a message a bot (this app included) posted.
	BotID       string
	User        string
	Text        string
	Channel     string
	ChannelType string
	TS          string
	ThreadTS    string
}

// eventCallback is the envelope's JSON shape (api.slack.com/apis/events-api).
type eventCallback struct {
	Type           string `json:"type"`
	EventID        string `json:"event_id"`
	Authorizations []struct {
		UserID string `json:"user_id"`
		IsBot  bool   `json:"is_bot"`
	} `json:"authorizations"`
	Event *struct {
		Type        string `json:"type"`
		Subtype     string `json:"subtype"`
		BotID       string `json:"bot_id"`
		User        string `json:"user"`
		Text        string `json:"text"`
		Channel     string `json:"channel"`
		ChannelType string `json:"channel_type"`
		TS          string `json:"ts"`
		ThreadTS    string `json:"thread_ts"`
	} `json:"event"`
}

var eventIDPattern = regexp.MustCompile(`^[A-Za-z0-9]{1,64}$`)

// ParseEventCallback reads an event_callback envelope. It refuses what is
// not one (a url_verification is the gateway's to answer), and an event id
// that cannot key a delivery.
func ParseEventCallback(payload []byte) (SlackMessage, error) {
	var env eventCallback
	if err := json.Unmarshal(payload, &env); err != nil {
		return SlackMessage{}, validation.Invalid("payload", "not a JSON Events API envelope: %v", err)
	}
	switch {
	case env.Type != "event_callback":
		return SlackMessage{}, validation.Invalid("payload", "type %q is not an event_callback", env.Type)
	case !eventIDPattern.MatchString(env.EventID):
		return SlackMessage{}, validation.Invalid("event_id", "%q is not a Slack event id (letters and digits, e.g. Ev0PV52K25)", env.EventID)
	case env.Event == nil:
		return SlackMessage{}, validation.Invalid("payload", "an event_callback without an event")
	}
	m := SlackMessage{
		EventID: env.EventID, Type: env.Event.Type, Subtype: env.Event.Subtype, BotID: env.Event.BotID,
		User: env.Event.User, Text: env.Event.Text, Channel: env.Event.Channel, ChannelType: env.Event.ChannelType,
		TS: env.Event.TS, ThreadTS: env.Event.ThreadTS,
	}
	for _, a := range env.Authorizations {
		if a.IsBot && a.UserID != "" {
			m.BotUserIDs = append(m.BotUserIDs, a.UserID)
		}
	}
	return m, nil
}

// Ignored says why m is nobody's words to act on, or "" when it is a
// person's new message: only plain messages from a user count; a bot's
// (this app's own replies included), an edit, a deletion or any other
// subtype is ignored, as is anything but a message event.
func (m SlackMessage) Ignored() string {
	switch {
	case m.Type != "message":
		return fmt.Sprintf("a %q event, not a message", m.Type)
	case m.BotID != "" || m.Subtype == "bot_message":
		return "a bot's message"
	case m.Subtype == "message_changed":
		return "an edit"
	case m.Subtype == "message_deleted":
		return "a deletion"
	case m.Subtype != "":
		return fmt.Sprintf("a %q message, not a person's new message", m.Subtype)
	case !slackid.Valid(m.User):
		return "a message with no Slack user"
	case !slackid.Valid(m.Channel) || m.TS == "":
		return "a message with no channel or timestamp"
	case strings.TrimSpace(m.Text) == "" || !utf8.ValidString(m.Text):
		return "an empty message"
	}
	return ""
}

// DM reports whether m is a direct message to the app.
func (m SlackMessage) DM() bool { return m.ChannelType == "im" }

// InThread reports whether m replies in a thread (rather than starting one).
func (m SlackMessage) InThread() bool { return m.ThreadTS != "" && m.ThreadTS != m.TS }

// Provenance is how a human message said in m is recorded: the spec's
// slack.dm or slack.channel_message.
func (m SlackMessage) Provenance() string {
	if m.DM() {
		return "slack.dm"
	}
	return "slack.channel_message"
}

// OccurredAt is when m was posted: its ts is Unix seconds and microseconds
// ("1355517523.000005"); zero when it does not read as one.
func (m SlackMessage) OccurredAt() time.Time {
	sec, frac, _ := strings.Cut(m.TS, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || s <= 0 {
		return time.Time{}
	}
	us, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return time.Unix(s, us*1000).UTC()
}

// Fires reports whether m fires t, and the prompt it starts the session
// with: m is in t's channel (or a DM to the app, for a "dm" trigger), from
// an allowed user, and passes t's prefix and mention rules, which are cut
// from the prompt.
func (t SlackTrigger) Fires(m SlackMessage) (prompt string, ok bool) {
	switch {
	case t.Channel == ChannelDM && !m.DM(), t.Channel != ChannelDM && t.Channel != m.Channel:
		return "", false
	case !t.Allows(m.User):
		return "", false
	}
	text := strings.TrimSpace(m.Text)
	if t.RequireMention {
		mentioned := false
		for _, bot := range m.BotUserIDs {
			tag := "<@" + bot + ">"
			if strings.Contains(text, tag) {
				mentioned = true
				text = strings.TrimSpace(strings.ReplaceAll(text, tag, ""))
			}
		}
		if !mentioned {
			return "", false
		}
	}
	if t.Prefix != "" {
		rest, found := strings.CutPrefix(text, t.Prefix)
		if !found {
			return "", false
		}
		text = strings.TrimSpace(rest)
	}
	if text == "" {
		return "", false
	}
	return text, true
}

// FirstFiring is the trigger of triggers (oldest first) that m fires, and
// its prompt: the oldest wins, so adding a trigger never takes a channel's
// messages from one that already matched them.
func FirstFiring(triggers []SlackTrigger, m SlackMessage) (SlackTrigger, string, bool) {
	for _, t := range triggers {
		if prompt, ok := t.Fires(m); ok {
			return t, prompt, true
		}
	}
	return SlackTrigger{}, "", false
}

// FollowUpPrompt is what a thread reply says to its session: the text,
// with a mention of the app cut.
func (m SlackMessage) FollowUpPrompt() string {
	text := m.Text
	for _, bot := range m.BotUserIDs {
		text = strings.ReplaceAll(text, "<@"+bot+">", "")
	}
	return strings.TrimSpace(text)
}

// SessionSlug is the slug of the session an event starts: derived from the
// event id, so starting it again (a retried step) finds the session it
// started rather than starting a second.
func SessionSlug(eventID string) string { return "slack-" + strings.ToLower(eventID) }

// EventIdempotencyKey is what an event's follow-up is queued under and
// its human message recorded under: Slack's event id names the one
// message, so a retried step finds what it did instead of doing it again.
func EventIdempotencyKey(eventID string) string { return "slack/" + eventID }

// SlackThread binds a Slack thread to the session it started.
type SlackThread struct {
	ChannelID string
	ThreadTS  string
	SessionID int64
	// TriggerID is the trigger that started it (0: deleted since).
	TriggerID int64
}

// SlackEvent is an accepted event and how far its processing got.
type SlackEvent struct {
	EventID    string
	Payload    []byte
	ReceivedAt time.Time
	// SessionID is the session it started or followed up (0: none yet).
	SessionID  int64
	FollowedUp bool
	// FollowUpAnswer is what the queue answered the follow-up (delivered
	// now, or queued behind the running turn), told in the thread.
	FollowUpAnswer string
	Captured       bool
	Replied        bool
	Processed      bool
	Outcome        string
}
