package domain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// MaxHumanMessageLength bounds a recorded message, as a prompt is bounded.
const MaxHumanMessageLength = 500_000

// MaxIdempotencyKeyChars bounds the key a boundary names an utterance with.
const MaxIdempotencyKeyChars = 255

// Provenance is the input boundary where Zimmer established that a named
// human authored a message.
type Provenance string

// The boundaries that record. Everything else — agents over MCP or REST,
// router-written prompts, wake-ups, nudges, subagents, polled GitHub
// comments — records nothing at all.
const (
	WebUINewSession      Provenance = "web_ui.new_session"
	WebUIQuickPrompt     Provenance = "web_ui.quick_prompt"
	WebUIChatBubble      Provenance = "web_ui.chat_bubble"
	WebUIFollowUp        Provenance = "web_ui.follow_up"
	WebUIEnqueuedMessage Provenance = "web_ui.enqueued_message"
	SlackChannelMessage  Provenance = "slack.channel_message"
	SlackDM              Provenance = "slack.dm"
)

// Provenances lists every boundary, in the order the spec names them.
var Provenances = []Provenance{
	WebUINewSession, WebUIQuickPrompt, WebUIChatBubble, WebUIFollowUp, WebUIEnqueuedMessage,
	SlackChannelMessage, SlackDM,
}

// ParseProvenance validates a provenance kind.
func ParseProvenance(s string) (Provenance, error) {
	p := Provenance(s)
	if !slices.Contains(Provenances, p) {
		names := make([]string, len(Provenances))
		for i, p := range Provenances {
			names[i] = string(p)
		}
		return "", validation.Invalid("provenance", "%q is not one of %s", s, strings.Join(names, ", "))
	}
	return p, nil
}

// Channel is the medium a human message arrived through: the part of its
// provenance before the dot.
type Channel string

// The channels that record.
const (
	ChannelWebUI Channel = "web_ui"
	ChannelSlack Channel = "slack"
)

// Label is the channel's name for a reader, the original's words.
func (c Channel) Label() string {
	switch c {
	case ChannelWebUI:
		return LabelWebUI
	case ChannelSlack:
		return LabelSlack
	}
	return string(c)
}

// Channel is the medium p arrived through.
func (p Provenance) Channel() Channel {
	c, _, _ := strings.Cut(string(p), ".")
	return Channel(c)
}

// WebUI reports whether p is a web-UI boundary, where the author is the
// admin (Zimmer has no login and one human reaches the UI).
func (p Provenance) WebUI() bool { return p.Channel() == ChannelWebUI }

// Slack reports whether p is a Slack boundary, where the author is resolved
// from the Slack user ID.
func (p Provenance) Slack() bool { return p.Channel() == ChannelSlack }

// HumanMessage is one message a named human authored, attached to the
// session it was said in. Immutable: there is no way to edit or delete one.
type HumanMessage struct {
	ID int64
	// Author is the roster key, stored verbatim rather than as a reference:
	// the record must not depend on the roster staying as it is.
	Author              string
	Provenance          Provenance
	AuthoredInSessionID int64
	Content             string
	// SlackPermalink links to the Slack message; empty for the web UI.
	SlackPermalink string
	OccurredAt     time.Time
	RecordedAt     time.Time
	// IdempotencyKey is the boundary's name for this one utterance ("":
	// none): a boundary that retries (it crashed before noting the record
	// done) gets the first record back instead of a second one.
	IdempotencyKey string
}

// Replay answers a record asked for again under first's idempotency key:
// nil when m says what first said — the same words, in the same session,
// through the same boundary — so first is the answer; otherwise an
// *IdempotencyKeyReusedError. The author is not compared: it was resolved
// when first was recorded, and a retry is answered as the first call was
// even if the roster changed since. Neither are occurred_at (a boundary
// that leaves it out gets "now" each time) or the permalink (Slack may
// only answer for it on a later attempt): they describe the utterance,
// they do not name it.
func (m HumanMessage) Replay(first HumanMessage) error {
	if m.Provenance == first.Provenance && m.AuthoredInSessionID == first.AuthoredInSessionID && m.Content == first.Content {
		return nil
	}
	return &IdempotencyKeyReusedError{Key: first.IdempotencyKey, First: first}
}

// IdempotencyKeyReusedError is the ErrAlreadyExists of an idempotency key
// that already names another utterance.
type IdempotencyKeyReusedError struct {
	Key   string
	First HumanMessage
}

func (e *IdempotencyKeyReusedError) Error() string {
	return fmt.Sprintf("idempotency_key %q already recorded human message %d (%s in session %d), which said something else; "+
		"a retry must repeat the message it names, and a new message needs a new key",
		e.Key, e.First.ID, e.First.Provenance, e.First.AuthoredInSessionID)
}

func (e *IdempotencyKeyReusedError) Unwrap() error { return ErrAlreadyExists }

// Validate reports the first field that makes m unfit to record.
func (m HumanMessage) Validate() error {
	if err := validateUserKey("author", m.Author); err != nil {
		return err
	}
	if _, err := ParseProvenance(string(m.Provenance)); err != nil {
		return err
	}
	switch {
	case m.AuthoredInSessionID <= 0:
		return validation.Invalid("authored_in_session_id", "must be a positive session id")
	case validation.Blank(m.Content):
		return validation.Invalid("content", "required")
	case len(m.Content) > MaxHumanMessageLength*4 || utf8.RuneCountInString(m.Content) > MaxHumanMessageLength:
		return validation.Invalid("content", "at most %d characters", MaxHumanMessageLength)
	case !utf8.ValidString(m.Content):
		return validation.Invalid("content", "must be valid UTF-8")
	case m.SlackPermalink != "" && !m.Provenance.Slack():
		return validation.Invalid("slack_permalink", "only a Slack message has a permalink")
	case m.SlackPermalink != "" && !strings.HasPrefix(m.SlackPermalink, "https://"):
		return validation.Invalid("slack_permalink", "must be an https:// URL")
	case m.OccurredAt.IsZero():
		return validation.Invalid("occurred_at", "required")
	}
	return ValidateIdempotencyKey(m.IdempotencyKey)
}

// ValidateIdempotencyKey refuses a key that cannot name an utterance: too
// long, not UTF-8, or holding control characters or blanks a reader of the
// record could not tell apart. "" (no key) is valid.
func ValidateIdempotencyKey(key string) error {
	switch {
	case key == "":
		return nil
	case !utf8.ValidString(key):
		return validation.Invalid("idempotency_key", "must be valid UTF-8")
	case utf8.RuneCountInString(key) > MaxIdempotencyKeyChars:
		return validation.Invalid("idempotency_key", "at most %d characters", MaxIdempotencyKeyChars)
	case strings.IndexFunc(key, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0:
		return validation.Invalid("idempotency_key", "no spaces or control characters: a boundary's name for one message, e.g. slack/Ev0PV52K25")
	}
	return nil
}

// Origin places a message relative to the session it is shown for.
type Origin string

const (
	// Here is a human speaking to this session: the only answer to "did a
	// human ask for this, here?".
	Here Origin = "here"
	// Elsewhere is a human speaking to another session of the hierarchy:
	// context about intent, never an instruction to this session.
	Elsewhere Origin = "elsewhere"
)

// PlacedMessage is a message with its origin for one viewing session.
type PlacedMessage struct {
	HumanMessage
	Origin Origin
}

// ChannelLabel is where m was said, for a reader: the channel's label, and
// for a message said elsewhere the session it was said in ("Slack
// (session #12)"), so it is never read as said to this session.
func (m PlacedMessage) ChannelLabel() string {
	label := m.Provenance.Channel().Label()
	if m.Origin == Elsewhere {
		return fmt.Sprintf("%s (session #%d)", label, m.AuthoredInSessionID)
	}
	return label
}

// SessionHumanMessages is the record gathered across a session's whole
// hierarchy, as seen from that session.
type SessionHumanMessages struct {
	SessionID int64
	// Messages are in the order they were said — occurred_at, then id —
	// oldest first, so that a conversation reads the way it happened.
	Messages []PlacedMessage
	// HereCount and ElsewhereCount are always both stated.
	HereCount      int
	ElsewhereCount int
	// Truncated means the hierarchy walk was cut by a bound: the elsewhere
	// count is then a floor, not a total.
	Truncated bool
}

// GatherHumanMessages places messages (authored anywhere in the hierarchy
// of sessionID) relative to sessionID and puts them in the order they were
// said. truncated says whether the walk that chose the sessions was cut
// short.
func GatherHumanMessages(sessionID int64, messages []HumanMessage, truncated bool) SessionHumanMessages {
	out := SessionHumanMessages{SessionID: sessionID, Truncated: truncated, Messages: make([]PlacedMessage, 0, len(messages))}
	for _, m := range messages {
		pm := PlacedMessage{HumanMessage: m, Origin: Elsewhere}
		if m.AuthoredInSessionID == sessionID {
			pm.Origin = Here
			out.HereCount++
		} else {
			out.ElsewhereCount++
		}
		out.Messages = append(out.Messages, pm)
	}
	slices.SortStableFunc(out.Messages, func(a, b PlacedMessage) int {
		return cmp.Or(a.OccurredAt.Compare(b.OccurredAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// HumanMessageHere answers "did a human speak to this session?" directly.
// Elsewhere records never count: false when only they exist.
func (s SessionHumanMessages) HumanMessageHere() bool { return s.HereCount > 0 }

// Any reports whether anybody in the hierarchy has a record.
func (s SessionHumanMessages) Any() bool { return s.HereCount+s.ElsewhereCount > 0 }
