package domain

import (
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Heartbeat interval bounds, in seconds: rules' bounds.
const (
	MinHeartbeatSeconds     = rules.MinHeartbeatSeconds
	MaxHeartbeatSeconds     = rules.MaxHeartbeatSeconds
	DefaultHeartbeatSeconds = rules.DefaultHeartbeatSeconds
)

// Patch changes a session's editable fields; nil means keep.
type Patch struct {
	Title           *string
	Slug            *string // "" removes it
	Goal            *string
	Notes           *string // "" clears them
	SchedulingClass *string
	Precedence      *int32
	// CustomMetadata is merged into the stored object; a nil value removes
	// its key.
	CustomMetadata           map[string]any
	HeartbeatEnabled         *bool
	HeartbeatIntervalSeconds *int32
	PushNotifications        *bool
	// CategoryID moves the session into a category; 0 makes it
	// uncategorized.
	CategoryID *int64
	Starred    *bool
}

// Validate checks the patch and reports every problem at once.
func (p Patch) Validate() error {
	var vs validation.Violations
	if p.Title != nil {
		checkText(&vs, "title", *p.Title, MaxTitleChars, "")
	}
	if p.Slug != nil && *p.Slug != "" {
		if err := ValidateSlug(*p.Slug); err != nil {
			vs.Add("slug", "%s", err)
		}
	}
	if p.Goal != nil {
		checkText(&vs, "goal", *p.Goal, MaxGoalChars, "")
	}
	if p.Notes != nil {
		checkText(&vs, "notes", *p.Notes, MaxNotesChars, "keep the notes short and put the detail in the repository")
	}
	if p.SchedulingClass != nil {
		checkSchedulingClass(&vs, *p.SchedulingClass, false)
	}
	checkMetadata(&vs, p.CustomMetadata)
	if i := p.HeartbeatIntervalSeconds; i != nil && (*i < MinHeartbeatSeconds || *i > MaxHeartbeatSeconds) {
		vs.Add("heartbeat_interval_seconds", "is %d; use %d to %d seconds", *i, MinHeartbeatSeconds, MaxHeartbeatSeconds)
	}
	if c := p.CategoryID; c != nil && *c < 0 {
		vs.Add("category_id", "is %d; use a category's id, or 0 for uncategorized", *c)
	}
	if p.empty() {
		vs.Add("body", "changes nothing; send at least one of title, slug, goal, notes, scheduling_class, precedence, custom_metadata, heartbeat_enabled, heartbeat_interval_seconds, push_notifications, category_id, starred")
	}
	return vs.Err()
}

func (p Patch) empty() bool {
	return p.Title == nil && p.Slug == nil && p.Goal == nil && p.Notes == nil && p.SchedulingClass == nil && p.Precedence == nil &&
		p.CustomMetadata == nil && p.HeartbeatEnabled == nil && p.HeartbeatIntervalSeconds == nil &&
		p.PushNotifications == nil && p.CategoryID == nil && p.Starred == nil
}

// Apply returns s with the patch applied and a timeline note naming what
// changed and, when by is set, the principal that changed it (Attributed).
// custom_metadata is merged into what is stored, so only here can the
// merged object be measured: one too large to store is refused.
func (p Patch) Apply(s Session, now time.Time, by string) (Session, TimelineEntry, error) {
	var changed []string
	set := func(name string, dst *string, v *string) {
		if v != nil && *dst != *v {
			*dst = *v
			changed = append(changed, name)
		}
	}
	set("title", &s.Title, p.Title)
	set("slug", &s.Slug, p.Slug)
	set("goal", &s.Goal, p.Goal)
	set("notes", &s.Notes, p.Notes)
	set("scheduling_class", &s.SchedulingClass, p.SchedulingClass)
	if p.Precedence != nil && s.Precedence != *p.Precedence {
		s.Precedence = *p.Precedence
		changed = append(changed, "precedence")
	}
	if p.CustomMetadata != nil {
		md := make(map[string]any, len(s.CustomMetadata)+len(p.CustomMetadata))
		for k, v := range s.CustomMetadata {
			md[k] = v
		}
		for k, v := range p.CustomMetadata {
			if v == nil {
				delete(md, k)
			} else {
				md[k] = v
			}
		}
		if n := metadataBytes(md); n > MaxMetadataBytes {
			return Session{}, TimelineEntry{}, validation.Invalid("custom_metadata",
				"merged into the session's, would be %d bytes as JSON; the limit is %d — remove keys (set them to null) or send less", n, MaxMetadataBytes)
		}
		s.CustomMetadata = md
		changed = append(changed, "custom_metadata")
	}
	if p.HeartbeatEnabled != nil && s.HeartbeatEnabled != *p.HeartbeatEnabled {
		s.HeartbeatEnabled = *p.HeartbeatEnabled
		changed = append(changed, "heartbeat_enabled")
	}
	if p.HeartbeatIntervalSeconds != nil && s.HeartbeatIntervalSeconds != *p.HeartbeatIntervalSeconds {
		s.HeartbeatIntervalSeconds = *p.HeartbeatIntervalSeconds
		changed = append(changed, "heartbeat_interval_seconds")
	}
	if p.PushNotifications != nil && s.PushNotifications != *p.PushNotifications {
		s.PushNotifications = *p.PushNotifications
		changed = append(changed, "push_notifications")
	}
	if p.CategoryID != nil {
		var next *int64
		if *p.CategoryID != 0 {
			id := *p.CategoryID
			next = &id
		}
		if !sameCategory(s.CategoryID, next) {
			s.CategoryID = next
			changed = append(changed, "category_id")
		}
	}
	if p.Starred != nil && s.Starred != *p.Starred {
		s.Starred = *p.Starred
		changed = append(changed, "starred")
	}
	s.UpdatedAt = now
	msg := "[Session] updated " + strings.Join(changed, ", ")
	if len(changed) == 0 {
		msg = "[Session] update changed nothing"
	}
	return s, TimelineEntry{Kind: TimelineNote, Message: Attributed(msg, by)}, nil
}

// Settings are the experimental settings.
type Settings struct {
	ProvenanceViaMCPEnabled bool
}

// DefaultSettings are the settings before anyone changes them.
var DefaultSettings = Settings{ProvenanceViaMCPEnabled: true}

// SessionDeleted announces a hard delete.
type SessionDeleted struct{ SessionID int64 }

func (SessionDeleted) isFact() {}

func sameCategory(a, b *int64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
