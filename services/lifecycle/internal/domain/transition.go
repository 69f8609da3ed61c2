package domain

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Markers are a session's lifecycle bookkeeping: the spec's metadata
// markers, typed.
type Markers struct {
	PausedBy                 string
	PendingSleep             bool
	PendingSleepRequiresWake bool
	BlockedOnElicitation     bool
	// Elicitation is the question the agent is blocked on, while
	// BlockedOnElicitation lasts (nil when the block named none).
	Elicitation *Elicitation
	// LostElicitation is the banner of a question that went unanswered.
	LostElicitation  *LostElicitation
	MCPFailure       string
	AuthOutageReason string
	DrainAttempts    int
	NeedsInputCount  int64
	PRURLWarned      bool
	RunningJobID     string
	FailureReason    string
	// RecoveryAbandoned says why Zimmer stopped recovering the session
	// automatically (AbandonRecovery); cleared by resume.
	RecoveryAbandoned string
	// StatusSummary is the session's status summary (HarvestStatusSummary);
	// nil until a fork of it ended. No transition changes it.
	StatusSummary *StatusSummary
}

// StatusSummaryForkKey is rules.StatusSummaryForkKey, the marker this
// domain reads.
const StatusSummaryForkKey = rules.StatusSummaryForkKey

// Command asks for one event, with what the event needs to know.
type Command struct {
	Event Event
	// Actor is who asked; it names the archiver on the archive line and is
	// never persisted.
	Actor Actor
	// FailureReason is recorded by fail.
	FailureReason string
	// SystemRecovery marks a resume by a recovery path: it keeps the
	// session's pending wake-ups instead of cancelling them.
	SystemRecovery bool
	// PausedBy records who paused (e.g. "user"); cleared by resume.
	PausedBy string
	// AuthOutageReason, on a pause, parks the session for a login-pool
	// outage (the spec's AuthOutageParkService): the marker is set, paused_by
	// is rules.PausedByAuthOutage, and the session goes on to sleep
	// (needs_input → waiting) with no wake armed, out of the automatic
	// deliveries' and the heartbeat's reach, until the pool's refill resumes
	// it. Cleared by resume.
	AuthOutageReason string
	// RunningJobID names the job that owns the agent process; set by start
	// and resume.
	RunningJobID string
	// Force is an archive forced past the queue's guard: the caller read
	// the queued messages it refused over and discards them. A system
	// archive never forces.
	Force bool
	// RetirementClause is what the queue says the archive retires (" — 1
	// queued message was never delivered …"), appended to the archive line
	// in its words; "" when nothing is retired or no queue was asked.
	RetirementClause string
	// ArchiveAttempt names the queue seal the archive was checked under
	// ("" when no queue was asked): the retirement carries it, so a
	// retirement arriving after its unarchive lifts that seal and no other.
	ArchiveAttempt string
	// IdempotencyKey, when set, names this transition: lifecycle records
	// it with the change, and a call with the same key again (a retried
	// activity whose first attempt committed) is answered as already
	// applied, changing nothing. Never persisted on the session.
	IdempotencyKey string
	// Elicitation is what block_on_elicitation blocks on.
	Elicitation *Elicitation
	// ElicitationOutcome is what became of the question an
	// unblock_from_elicitation ends: an action the agent took, LostExpired
	// or LostStranded (which leave the banner), or "" (unknown).
	ElicitationOutcome string
}

// Validate checks the details a caller sent with the command.
func (c Command) Validate() error {
	var vs validation.Violations
	checkText(&vs, "failure_reason", c.FailureReason, MaxFailureReasonChars, "say why in a sentence and leave the detail in the logs")
	checkText(&vs, "paused_by", c.PausedBy, MaxPausedByChars, "")
	checkText(&vs, "auth_outage_reason", c.AuthOutageReason, MaxAuthOutageReasonChars, "name the login pool, the wall and its reset in a sentence")
	checkText(&vs, "running_job_id", c.RunningJobID, MaxRunningJobIDChars, "")
	checkText(&vs, "idempotency_key", c.IdempotencyKey, MaxIdempotencyKeyChars, "")
	validateElicitation(&vs, c.Elicitation)
	if err := ValidateElicitationOutcome(c.ElicitationOutcome); err != nil {
		return err
	}
	return vs.Err()
}

// Wakes are the wake-ups armed for a session when a transition runs (only
// armed ones: a firing trigger is being delivered), and the armed watchers
// of it.
type Wakes struct {
	OneTime  int // wall-clock schedules (wake_me_up_later, Pause Until)
	Watchers int // "wake me when that session changes state"
	// LatestOneTime is the latest fire_at among the armed one-time wakes;
	// zero when none is armed.
	LatestOneTime time.Time
	// Watching are other sessions' armed watchers of this one: a transition
	// to a state they wait for fires them (fire_ao_event_triggers).
	Watching []Watch
}

// Any reports whether anything is armed.
func (w Wakes) Any() bool { return w.OneTime+w.Watchers > 0 }

// WakeAhead reports whether a one-time wake is still ahead of now: the
// session sleeps until a chosen moment. An overdue one is a stall.
func (w Wakes) WakeAhead(now time.Time) bool { return w.OneTime > 0 && w.LatestOneTime.After(now) }

// Asleep reports whether the session is asleep on purpose
// (awaiting_scheduled_wake): a one-time wake still ahead of it, or an
// armed watcher, which has no time and so is always ahead.
func (w Wakes) Asleep(now time.Time) bool { return w.WakeAhead(now) || w.Watchers > 0 }

// Env is what a transition reads from outside the session.
type Env struct {
	Now            time.Time
	Wakes          Wakes
	TrashRetention time.Duration // how long an archived session stays restorable (spec: 4 days)
	// FreshJobID is a job id drawn for this transition: a resume whose
	// caller names no job is owned by it, and the runner runs its turn under
	// it (Outcome.AsksForTurn).
	FreshJobID string
}

// Effect is a side effect of a transition that belongs to another context
// or that lifecycle carries out inside the transition. It is recorded in
// the transition's own transaction and delivered at least once. Each kind
// is a type of its own carrying its fields; its name (the spec's callback
// name, also the dedup key of the alert its failure raises) is the wire's
// (event.proto's effect_name). Every kind decides its owner and whether
// its failure pages, so a new kind cannot forget either.
type Effect interface {
	// Owner is the context that carries the effect out, or "" when
	// lifecycle does it itself inside the transition.
	Owner() string
	// Alerting reports whether a failure of this effect pages (the spec's
	// "Alerts" row) rather than only being logged: a failure there leaves
	// persistent state inconsistent and nothing reconciles it.
	Alerting() bool
}

// The effects, as the spec's callbacks.
type (
	// FireTriggers fires the session's AO event triggers: Trigger is
	// session_needs_input, session_failed or session_archived.
	FireTriggers struct{ Trigger string }
	// NeedsInputPush is a pause's debounced push; NeedsInputCount is the
	// debounce's marker.
	NeedsInputPush struct{ NeedsInputCount int64 }
	// Inference infers the title and category a paused session lacks
	// (Session.InferencePending).
	Inference struct{}
	// StatusSummaryRefresh refreshes the session's status summary.
	StatusSummaryRefresh struct{}
	// Drain drains the session's queue after a pause; StatusAfter is what
	// the pause left (a pending sleep may have moved it on).
	Drain struct{ StatusAfter Status }
	// CancelWakes cancels the session's pending wake-ups, unless Preserve
	// (a recovery resume keeps them armed).
	CancelWakes struct{ Preserve bool }
	// MarkNotificationsStale stales the session's notifications.
	MarkNotificationsStale struct{}
	// FailurePush is a failure's push.
	FailurePush struct{ FailureReason string }
	// DismissNotifications dismisses an archived session's notifications.
	DismissNotifications struct{}
	// CleanupWatchers cancels the watchers an archived session armed.
	CleanupWatchers struct{}
	// DeferredCleanup cleans the archived session's clone up once the
	// trash's deadline, TrashAfter, has passed.
	DeferredCleanup struct{ TrashAfter time.Time }
	// HarvestFork harvests a status-summary fork whose one turn ended;
	// Failed (with its FailureReason) when it failed rather than paused.
	HarvestFork struct {
		Failed        bool
		FailureReason string
	}
	// RecordFlags records the experimental settings a start or resume ran
	// with.
	RecordFlags struct{}
	// RetireMessages: an archive retires the session's queued messages to
	// undelivered (and the queue pages per its rule).
	RetireMessages struct {
		Forced     bool
		ArchivedAt time.Time
		// AttemptID is the archive attempt that sealed the queue ("" for
		// a system archive).
		AttemptID string
	}
	// ReopenMessages: an unarchive reopens the session's queue; what was
	// retired stays undelivered.
	ReopenMessages struct{ UnarchivedAt time.Time }
	// RestoreClone: an unarchive brings the session's clone back (the
	// runner re-clones and applies what the archive preserved, or puts a
	// retained clone back to work).
	RestoreClone struct{}
)

// Contexts that own effects.
const (
	OwnerNotification = "notification"
	OwnerQueue        = "queue"
	OwnerRunner       = "runner"
	// OwnerTriggers is the triggers' timers (Temporal workflows started
	// in-process by lifecycle): the subscriber of lifecycle.trigger_armed
	// and lifecycle.trigger_due. The trigger effects themselves, like
	// record_experimental_setting_flags, have no owner: lifecycle does them
	// in the transition's own transaction.
	OwnerTriggers = "triggers"
)

// Owners. An effect with no owner is carried out by lifecycle in the
// transition's own transaction. The three trigger effects are lifecycle's:
// the armed set lives in its wake_triggers, and resume's cancel, a
// watcher's firing and the watchers' clean-up must be decided under the
// session's lock (the triggers' timers hear of them through the outbox's
// "triggers" subscriber).
func (FireTriggers) Owner() string           { return "" }
func (CancelWakes) Owner() string            { return "" }
func (CleanupWatchers) Owner() string        { return "" }
func (RecordFlags) Owner() string            { return "" }
func (NeedsInputPush) Owner() string         { return OwnerNotification }
func (FailurePush) Owner() string            { return OwnerNotification }
func (MarkNotificationsStale) Owner() string { return OwnerNotification }
func (DismissNotifications) Owner() string   { return OwnerNotification }
func (Drain) Owner() string                  { return OwnerQueue }
func (RetireMessages) Owner() string         { return OwnerQueue }
func (ReopenMessages) Owner() string         { return OwnerQueue }
func (DeferredCleanup) Owner() string        { return OwnerRunner }
func (Inference) Owner() string              { return OwnerRunner }
func (StatusSummaryRefresh) Owner() string   { return OwnerRunner }
func (HarvestFork) Owner() string            { return OwnerRunner }
func (RestoreClone) Owner() string           { return OwnerRunner }

// Alerting, the spec's table.
func (FireTriggers) Alerting() bool    { return true }
func (CancelWakes) Alerting() bool     { return true }
func (CleanupWatchers) Alerting() bool { return true }

// Alerting: not in the spec's table (drain came later) but the same kind:
// a lost drain leaves a message pending on a session at rest, which
// nothing else reconciles.
func (Drain) Alerting() bool { return true }

// Alerting: a lost retirement leaves messages pending on an archived
// session that nothing will ever deliver, unrecorded; a lost reopening
// leaves a restored session's queue sealed against every enqueue.
func (RetireMessages) Alerting() bool { return true }

// Alerting: see RetireMessages.
func (ReopenMessages) Alerting() bool { return true }

// Alerting: a lost restore leaves a restored session without its clone
// and its preserved work in the store, which nothing else reconciles.
func (RestoreClone) Alerting() bool { return true }

// Alerting: the rest only log their failures.
func (NeedsInputPush) Alerting() bool         { return false }
func (FailurePush) Alerting() bool            { return false }
func (MarkNotificationsStale) Alerting() bool { return false }
func (DismissNotifications) Alerting() bool   { return false }
func (DeferredCleanup) Alerting() bool        { return false }
func (Inference) Alerting() bool              { return false }
func (StatusSummaryRefresh) Alerting() bool   { return false }
func (HarvestFork) Alerting() bool            { return false }
func (RecordFlags) Alerting() bool            { return false }

// TimelineKind classifies a timeline line.
type TimelineKind string

// Timeline kinds.
const (
	TimelineTransition TimelineKind = "transition"
	TimelineWarning    TimelineKind = "warning"
	TimelineRefusal    TimelineKind = "refusal"
	// TimelineNote records a change that is not a transition (a deferred
	// sleep, say).
	TimelineNote TimelineKind = "note"
)

// TimelineEntry is one line of a session's timeline.
type TimelineEntry struct {
	Kind    TimelineKind
	Message string
}

// Outcome is what applying a command produced.
type Outcome struct {
	Session  Session
	From     Status
	Applied  []Event // pause can apply a deferred sleep after itself
	Effects  []Effect
	Timeline []TimelineEntry
	// AsksForTurn: a resume no running job made (a restart, a raw resume
	// naming no job), so the runner must run its turn, under the session's
	// running_job_id. The runner's own resumes name their turn and ask for
	// none.
	AsksForTurn bool
	// TurnPrompt is the prompt of the turn AsksForTurn asks for: a
	// delivery's; "" for a restart (the runner's continue nudge).
	TurnPrompt string
	// MetadataRemoved are the custom_metadata keys the transition removed
	// (a resume's stale MCP-failure markers); the store removes exactly
	// these, so a transition never rewrites the rest of the object.
	MetadataRemoved []string
	// SupersedeOneTimeWakes: the session's own armed one-time wake-ups are
	// cancelled by the same commit (the Spot Queue replaces a wake armed
	// from the same control).
	SupersedeOneTimeWakes bool
	// AlreadyApplied: a call with the same idempotency key applied this
	// transition before; nothing changed now, and Session is the session
	// as it stands (From is the state the first call moved it from).
	AlreadyApplied bool
}

// Apply runs cmd against s: the guard, the state change and every piece of
// the event's bookkeeping in the spec's order. It is pure; the caller
// persists the outcome in one transaction.
func Apply(s Session, cmd Command, env Env) (Outcome, error) {
	e := cmd.Event
	if _, ok := machine[e]; !ok {
		return Outcome{}, fmt.Errorf("unknown event %q", e)
	}
	if !e.AllowedFrom(s.Status) {
		return Outcome{}, &TransitionError{SessionID: s.ID, Event: e, From: s.Status}
	}
	if reason := guard(s, e, env); reason != "" {
		return Outcome{}, &TransitionError{SessionID: s.ID, Event: e, From: s.Status, Reason: reason}
	}
	t := &transition{s: s, env: env, out: Outcome{From: s.Status}, by: cmd.Actor.By}
	t.fire(e)
	switch e {
	case EventStart:
		t.s.ElapsedSince = ptrTime(env.Now)
		t.s.Markers.RunningJobID = cmd.RunningJobID
		t.effect(RecordFlags{})
	case EventResume:
		t.resume(cmd)
	case EventPause:
		t.pause(cmd)
	case EventSleep:
		t.clearPendingSleep()
	case EventBlockOnElicitation:
		// The agent process is alive and mid-round-trip: keep the running
		// job, surface the session as needing input.
		t.s.Markers.BlockedOnElicitation = true
		t.block(cmd.Elicitation)
		t.effect(FireTriggers{Trigger: "session_needs_input"})
	case EventUnblockFromElicitation:
		t.s.Markers.BlockedOnElicitation = false
		t.unblock(cmd.ElicitationOutcome)
	case EventFail:
		t.fail(cmd)
	case EventArchive:
		t.archive(cmd)
	case EventUnarchiveToWaiting, EventUnarchiveToFailed, EventUnarchiveToNeedsInput:
		if e == EventUnarchiveToNeedsInput {
			t.restore(cmd, s.Status)
		}
		t.s.TrashAfter = nil
		t.s.ArchivedAt = nil
		t.s.ArchivedFrom = nil
		t.effect(ReopenMessages{UnarchivedAt: env.Now})
		t.effect(RestoreClone{})
	}
	t.s.UpdatedAt = env.Now
	t.out.Session = t.s
	return t.out, nil
}

type transition struct {
	s   Session
	env Env
	out Outcome
	by  string // the call's principal, named on every line (Attributed)
}

func (t *transition) fire(e Event) {
	from := t.s.Status
	t.s.Status = e.Target()
	t.out.Applied = append(t.out.Applied, e)
	if e == EventArchive || e == EventUnarchiveToNeedsInput {
		return // the archive and restoration lines, which name who did it, are these transitions' lines
	}
	t.log(TimelineTransition, fmt.Sprintf("[State Machine] %s → %s (%s)", from, t.s.Status, e))
}

func (t *transition) effect(e Effect) {
	t.out.Effects = append(t.out.Effects, e)
}

func (t *transition) log(kind TimelineKind, msg string) {
	t.out.Timeline = append(t.out.Timeline, TimelineEntry{Kind: kind, Message: Attributed(msg, t.by)})
}

func (t *transition) isFork() bool { return t.s.IsStatusSummaryFork() }

func (t *transition) resume(cmd Command) {
	t.effect(RecordFlags{})
	m := &t.s.Markers
	t.clearStaleMCPFailure()
	m.PausedBy = ""
	// Any resume ends a park: the refill's own, or a person's, who takes
	// the session on whatever the pool holds.
	m.AuthOutageReason = ""
	m.BlockedOnElicitation = false
	m.Elicitation = nil
	m.LostElicitation = nil
	t.clearPendingSleep()
	m.DrainAttempts = 0
	m.RecoveryAbandoned = ""
	m.RunningJobID = cmd.RunningJobID
	if m.RunningJobID == "" {
		m.RunningJobID = t.env.FreshJobID
		t.out.AsksForTurn = true
	}
	t.s.ElapsedSince = ptrTime(t.env.Now)
	t.effect(MarkNotificationsStale{})
	if !cmd.SystemRecovery {
		t.effect(CancelWakes{Preserve: false})
		return
	}
	// A recovery resume did not choose to wake: what the session was
	// sleeping on is still what it waits for. Keep it armed, and when a
	// wall-clock wake is among it, go back to sleep once this turn ends.
	t.effect(CancelWakes{Preserve: true})
	if t.env.Wakes.OneTime > 0 {
		m.PendingSleep = true
		m.PendingSleepRequiresWake = true
	}
}

// block records the question the agent is blocked on: a fresh
// elicitation clears the banner of a lost one. A block naming none (a raw
// transition) keeps no question, and nothing can answer it.
func (t *transition) block(e *Elicitation) {
	m := &t.s.Markers
	m.LostElicitation = nil
	m.Elicitation = nil
	if e == nil {
		return
	}
	pending := *e
	pending.RequestedAt = t.env.Now
	if pending.TurnID == "" {
		pending.TurnID = m.RunningJobID
	}
	m.Elicitation = &pending
	t.log(TimelineNote, fmt.Sprintf("[Elicitation] the agent asks (%s): %s", quoteID(pending.ID),
		clipRunes(strings.Join(strings.Fields(pending.Message), " "), MaxLostSummaryRunes)))
}

// unblock ends the block: a question that expired or was stranded leaves
// the lost_elicitation banner; an answer (a cancel too) leaves none.
func (t *transition) unblock(outcome string) {
	m := &t.s.Markers
	pending := m.Elicitation
	m.Elicitation = nil
	if outcome != LostExpired && outcome != LostStranded {
		return
	}
	m.LostElicitation = lose(pending, outcome, t.env.Now)
	t.log(TimelineWarning, LostElicitationLine(*m.LostElicitation))
}

// LostElicitationLine is the timeline line of a question lost.
func LostElicitationLine(l LostElicitation) string {
	why := "the agent stopped waiting before anyone answered"
	if l.Reason == LostStranded {
		why = "its round-trip is gone: nobody can answer it now"
	}
	return fmt.Sprintf("[Elicitation] %s went unanswered (%s): %s; lost_elicitation set", quoteID(l.RequestID), l.Reason, why)
}

// restore is the unarchive's full restoration: the session comes back
// ready for its next message, with none of the failure or process state it
// was archived with (failure_reason, the running job, paused_by, a pending
// sleep, elicitation markers, MCP failure flags, the drain budget, an
// abandoned recovery), and one line says so.
func (t *transition) restore(cmd Command, from Status) {
	m := &t.s.Markers
	m.FailureReason = ""
	m.RunningJobID = ""
	m.PausedBy = ""
	m.BlockedOnElicitation = false
	m.Elicitation = nil
	m.LostElicitation = nil
	t.clearStaleMCPFailure()
	m.DrainAttempts = 0
	m.RecoveryAbandoned = ""
	t.clearPendingSleep()
	t.log(TimelineTransition, UnarchiveLine(cmd.Actor, from, t.s.Status, EventUnarchiveToNeedsInput))
}

// clearStaleMCPFailure drops what an earlier MCP-failure check left: the
// marker, and the custom_metadata keys the original clears on resume
// (rules.MCPFailureMetadataKeys) — those and no other key. A resumed
// session that kept them would be failed again on a stale flag.
func (t *transition) clearStaleMCPFailure() {
	t.s.Markers.MCPFailure = ""
	var md map[string]any
	for _, k := range rules.MCPFailureMetadataKeys() {
		if _, ok := t.s.CustomMetadata[k]; !ok {
			continue
		}
		if md == nil {
			md = maps.Clone(t.s.CustomMetadata) // the caller's session is not changed
		}
		delete(md, k)
		t.out.MetadataRemoved = append(t.out.MetadataRemoved, k)
	}
	if md != nil {
		t.s.CustomMetadata = md
	}
}

// pause performs the spec's eight steps, in order.
func (t *transition) pause(cmd Command) {
	fork := t.isFork()
	t.warnIfPRGoalCapturedNoURL() // 1
	t.s.Markers.RunningJobID = "" // 2
	if cmd.PausedBy != "" {
		t.s.Markers.PausedBy = cmd.PausedBy
	}
	if fork {
		// Its one turn is finished: harvest and archive it instead of
		// notifying anyone (steps 3–6 skipped).
		t.effect(HarvestFork{})
	} else {
		t.effect(FireTriggers{Trigger: "session_needs_input"}) // 3
		t.s.Markers.NeedsInputCount++                          // 4: the debounce marker
		t.effect(NeedsInputPush{NeedsInputCount: t.s.Markers.NeedsInputCount})
		if t.s.InferencePending() { // 5
			t.effect(Inference{})
		}
		t.effect(StatusSummaryRefresh{}) // 6
	}
	if cmd.AuthOutageReason != "" {
		t.park(cmd.AuthOutageReason)
	} else {
		t.executePendingSleep() // 7
	}
	if fork {
		// Nor does it drain: it is not coming to rest but to the trash,
		// whose archive (the harvest's) retires and names anything queued
		// for it. A drain could only race that archive into delivering a
		// message to a throwaway.
		return
	}
	t.effect(Drain{StatusAfter: t.s.Status}) // 8: reads what the sleep left
}

// park is a pause that parks the session for a login-pool outage: the
// marker, paused_by auth_outage, and the sleep path (needs_input →
// waiting) with no wake armed. A pending sleep is superseded: the session
// sleeps now, and a wake it had armed stays armed (the refill skips a
// session asleep on one, and the wake's turn resumes it).
func (t *transition) park(reason string) {
	m := &t.s.Markers
	m.AuthOutageReason = reason
	m.PausedBy = rules.PausedByAuthOutage
	t.clearPendingSleep()
	t.log(TimelineWarning, "[Accounts] parked until the login pool refills: "+reason)
	t.fire(EventSleep)
}

func (t *transition) executePendingSleep() {
	m := &t.s.Markers
	if !m.PendingSleep {
		return
	}
	if m.PendingSleepRequiresWake && !t.env.Wakes.Any() {
		// A recovery re-sleep whose wake already fired: sleeping now would
		// leave the session in waiting with nothing armed.
		t.clearPendingSleep()
		t.log(TimelineWarning, "[State Machine] pending sleep dropped: no wake-up is armed any more")
		return
	}
	t.clearPendingSleep()
	t.fire(EventSleep)
}

func (t *transition) clearPendingSleep() {
	t.s.Markers.PendingSleep = false
	t.s.Markers.PendingSleepRequiresWake = false
}

func (t *transition) fail(cmd Command) {
	t.s.Markers.FailureReason = cmd.FailureReason
	t.s.Markers.RunningJobID = ""
	if t.isFork() {
		t.effect(HarvestFork{Failed: true, FailureReason: cmd.FailureReason})
	} else {
		t.effect(FireTriggers{Trigger: "session_failed"})
		t.effect(FailurePush{FailureReason: cmd.FailureReason})
		t.effect(StatusSummaryRefresh{})
	}
	if cmd.FailureReason != "" {
		t.log(TimelineWarning, "[State Machine] failure reason: "+cmd.FailureReason)
	}
	t.warnIfPRGoalCapturedNoURL() // last, so nothing above can skip it
}

func (t *transition) archive(cmd Command) {
	from := t.out.From
	t.s.ArchivedFrom = &from
	t.s.ArchivedAt = ptrTime(t.env.Now)
	t.s.TrashAfter = ptrTime(t.env.Now.Add(t.env.TrashRetention))
	// Nobody answers an archived session's questions, and its banner would
	// speak of a session that is put away.
	t.s.Markers.Elicitation = nil
	t.s.Markers.LostElicitation = nil
	t.effect(DismissNotifications{})
	t.effect(FireTriggers{Trigger: "session_archived"})
	t.effect(CleanupWatchers{})
	t.effect(DeferredCleanup{TrashAfter: *t.s.TrashAfter})
	// Every archive retires the queue, a system archive too: the guard is
	// the caller's, the record of what was lost is the transition's.
	t.effect(RetireMessages{Forced: cmd.Force, ArchivedAt: *t.s.ArchivedAt, AttemptID: cmd.ArchiveAttempt})
	// The spec's words first (who, the unresolved pull requests), then the
	// queue's words for what the archive retires.
	t.log(TimelineTransition, ArchiveLine(cmd.Actor, unresolvedPullRequests(t.s.PullRequests))+cmd.RetirementClause)
	t.warnIfPRGoalCapturedNoURL()
}

var prGoal = regexp.MustCompile(`(?i)\bpull request\b|\bPR\b`)

// warnIfPRGoalCapturedNoURL writes, once per session, a warning when the
// goal mentions a pull request and none has been recorded. Status-summary
// forks are carved out here: a fork can inherit its source's goal.
func (t *transition) warnIfPRGoalCapturedNoURL() {
	if t.s.Markers.PRURLWarned || t.isFork() || !prGoal.MatchString(t.s.Goal) {
		return
	}
	if len(t.s.PullRequests) > 0 {
		return
	}
	t.s.Markers.PRURLWarned = true
	t.log(TimelineWarning, "[State Machine] goal mentions a pull request but no PR URL was recorded for this session yet")
}

func ptrTime(t time.Time) *time.Time { return &t }

// TimelineLine is a stored timeline entry.
type TimelineLine struct {
	ID        int64
	Kind      TimelineKind
	Message   string
	CreatedAt time.Time
}

// StreamEvent is a stored entry of a session's event stream: an applied
// transition ("transition") or an effect it requested.
type StreamEvent struct {
	ID        int64
	EventID   string
	Name      string
	Alerting  bool
	Payload   map[string]any
	CreatedAt time.Time
}

// Sleep is the sleep command: a needs_input session goes to waiting now; a
// running one is marked to sleep when its turn ends (a deliberate sleep, so
// it carries no requires-wake marker and always executes).
func Sleep(s Session, cmd Command, env Env) (Outcome, error) {
	if s.Status != StatusRunning {
		cmd.Event = EventSleep
		return Apply(s, cmd, env)
	}
	s.Markers.PendingSleep = true
	s.Markers.PendingSleepRequiresWake = false
	s.UpdatedAt = env.Now
	return Outcome{
		Session:  s,
		From:     StatusRunning,
		Timeline: []TimelineEntry{{Kind: TimelineNote, Message: Attributed("[State Machine] sleep deferred: the session will go to waiting when its turn ends", cmd.Actor.By)}},
	}, nil
}
