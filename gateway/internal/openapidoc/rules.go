package openapidoc

import (
	"fmt"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// constraint applies one lifecycle rule to a schema (or a query
// parameter): the schema keyword a client can check, and a sentence a
// reader can.
type constraint func(s *object)

// fieldRules are the rules each request and response field follows, by
// definition and property. A name that is not in the generated document is
// an error, so renaming a field cannot silently drop its rule.
var fieldRules = []struct {
	definition, property string
	constraints          []constraint
}{
	{"v1CreateSessionRequest", "prompt", []constraint{maxChars(rules.MaxPromptChars)}},
	{"v1CreateSessionRequest", "title", []constraint{maxChars(rules.MaxTitleChars)}},
	{"v1CreateSessionRequest", "slug", []constraint{slug()}},
	{"v1CreateSessionRequest", "goal", []constraint{maxChars(rules.MaxGoalChars)}},
	{"v1CreateSessionRequest", "scheduling_class", []constraint{schedulingClass()}},
	{"v1CreateSessionRequest", "custom_metadata", []constraint{maxMetadata()}},
	{"v1CreateSessionRequest", "git_root", []constraint{maxChars(rules.MaxGitRootChars)}},
	{"v1CreateSessionRequest", "branch", []constraint{maxChars(rules.MaxBranchChars)}},
	{"v1CreateSessionRequest", "subdirectory", []constraint{maxChars(rules.MaxSubdirectoryChars)}},
	{"v1CreateSessionRequest", "agent_root", []constraint{maxChars(rules.MaxAgentRootChars)}},
	{"v1CreateSessionRequest", "agent_runtime", []constraint{maxChars(rules.MaxAgentRuntimeChars), agentRuntime()}},
	{"LifecycleServiceUpdateSessionBody", "title", []constraint{maxChars(rules.MaxTitleChars)}},
	{"LifecycleServiceUpdateSessionBody", "slug", []constraint{slug()}},
	{"LifecycleServiceUpdateSessionBody", "goal", []constraint{maxChars(rules.MaxGoalChars)}},
	{"LifecycleServiceUpdateSessionBody", "notes", []constraint{maxChars(rules.MaxNotesChars)}},
	{"LifecycleServiceUpdateSessionBody", "scheduling_class", []constraint{schedulingClass()}},
	{"LifecycleServiceUpdateSessionBody", "custom_metadata", []constraint{maxMetadata()}},
	{"LifecycleServiceUpdateSessionBody", "heartbeat_interval_seconds", []constraint{heartbeatInterval()}},
	{"LifecycleServiceSetSessionHeartbeatBody", "interval_seconds", []constraint{heartbeatInterval()}},
	{"LifecycleServiceTransitionSessionBody", "event", []constraint{event()}},
	{"LifecycleServiceTransitionSessionBody", "failure_reason", []constraint{maxChars(rules.MaxFailureReasonChars)}},
	{"LifecycleServiceTransitionSessionBody", "paused_by", []constraint{maxChars(rules.MaxPausedByChars)}},
	{"LifecycleServiceTransitionSessionBody", "running_job_id", []constraint{maxChars(rules.MaxRunningJobIDChars)}},
	{"v1BulkArchiveSessionsRequest", "session_ids", []constraint{sessionRefs()}},
	// A queued message becomes a turn's prompt and its goal the session's:
	// the session's limits.
	{"QueueServiceFollowUpBody", "prompt", []constraint{maxChars(rules.MaxPromptChars)}},
	{"QueueServiceFollowUpBody", "goal", []constraint{maxChars(rules.MaxGoalChars)}},
	{"QueueServiceEnqueueMessageBody", "content", []constraint{maxChars(rules.MaxPromptChars)}},
	{"QueueServiceEnqueueMessageBody", "goal", []constraint{maxChars(rules.MaxGoalChars)}},
	{"QueueServiceUpdateEnqueuedMessageBody", "content", []constraint{maxChars(rules.MaxPromptChars)}},
	{"QueueServiceUpdateEnqueuedMessageBody", "goal", []constraint{maxChars(rules.MaxGoalChars)}},
	{"v1Session", "status", []constraint{status()}},
	{"v1Session", "slug", []constraint{slug()}},
	{"v1Session", "scheduling_class", []constraint{schedulingClass()}},
	{"v1Session", "notes", []constraint{maxChars(rules.MaxNotesChars)}},
	{"v1Session", "heartbeat_interval_seconds", []constraint{heartbeatInterval()}},
}

// paramRules are the rules of query parameters, by route and name.
var paramRules = []struct {
	method, path, param string
	constraints         []constraint
}{
	{"get", "/api/v1/sessions", "status", []constraint{status()}},
	{"get", "/api/v1/sessions", "scheduling_class", []constraint{schedulingClass()}},
	{"get", "/api/v1/sessions", "page", []constraint{minimum(1)}},
	{"get", "/api/v1/sessions", "per_page", []constraint{perPage()}},
	{"get", "/api/v1/sessions", "q", []constraint{maxChars(rules.MaxQueryChars)}},
	{"get", "/api/v1/sessions", "genesis", []constraint{maxChars(rules.MaxGenesisChars)}},
}

// rules applies fieldRules and paramRules.
func (d *document) rules() error {
	for _, r := range fieldRules {
		prop := d.defs.obj(r.definition).obj("properties").obj(r.property)
		if prop == nil {
			return fmt.Errorf("no property %s.%s in the generated document", r.definition, r.property)
		}
		for _, c := range r.constraints {
			c(prop)
		}
	}
	for _, r := range paramRules {
		op, err := d.operation(r.path, r.method)
		if err != nil {
			return err
		}
		var param *object
		params, _ := op.get("parameters").([]any)
		for _, p := range params {
			if p, ok := p.(*object); ok && p.str("name") == r.param {
				param = p
			}
		}
		if param == nil {
			return fmt.Errorf("no parameter %s of %s %s in the generated document", r.param, strings.ToUpper(r.method), r.path)
		}
		for _, c := range r.constraints {
			c(param)
		}
	}
	return nil
}

var printer = message.NewPrinter(language.English)

// describe appends sentence to s's description, once.
func describe(s *object, sentence string) {
	desc := s.str("description")
	switch {
	case strings.Contains(desc, sentence):
	case desc == "":
		s.set("description", sentence)
	default:
		s.set("description", desc+" "+sentence)
	}
}

func maxChars(n int) constraint {
	return func(s *object) {
		s.set("maxLength", n)
		if strings.Contains(s.str("description"), printer.Sprintf("≤ %d characters", n)) {
			return // the proto's comment says it already
		}
		describe(s, printer.Sprintf("At most %d characters.", n))
	}
}

func maxMetadata() constraint {
	return func(s *object) {
		describe(s, printer.Sprintf("At most %d bytes as JSON, nested at most %d levels deep.",
			rules.MaxMetadataBytes, rules.MaxMetadataDepth))
	}
}

func slug() constraint {
	return func(s *object) {
		s.set("pattern", rules.SlugPattern)
		s.set("maxLength", rules.MaxSlugChars)
		describe(s, printer.Sprintf("A slug is %s, at most %d characters.", rules.SlugShape, rules.MaxSlugChars))
	}
}

// enum sets the allowed words, on a list's items when s is a list.
func enum(s *object, words []string) {
	if s.str("type") == "array" {
		s = s.obj("items")
	}
	s.set("enum", words)
}

func status() constraint {
	return func(s *object) {
		enum(s, rules.Statuses())
		describe(s, "The status words: "+strings.Join(rules.Statuses(), ", ")+" (docs/state-machine.md).")
	}
}

func schedulingClass() constraint {
	return func(s *object) {
		enum(s, rules.SchedulingClasses())
		describe(s, fmt.Sprintf("One of %s or %s; a session created without one takes its parent's, else %[1]s.", rules.SchedulingPriority, rules.SchedulingSpot))
	}
}

func agentRuntime() constraint {
	return func(s *object) {
		enum(s, rules.AgentRuntimes())
		describe(s, "One of "+strings.Join(rules.AgentRuntimes(), ", ")+"; a session created without one runs the runner's default.")
	}
}

func heartbeatInterval() constraint {
	return func(s *object) {
		s.set("minimum", rules.MinHeartbeatSeconds)
		s.set("maximum", rules.MaxHeartbeatSeconds)
		describe(s, printer.Sprintf("Seconds between heartbeat nudges, %d to %d; a new session has %d.",
			rules.MinHeartbeatSeconds, rules.MaxHeartbeatSeconds, rules.DefaultHeartbeatSeconds))
	}
}

func minimum(n int) constraint {
	return func(s *object) { s.set("minimum", n) }
}

// perPage documents rules.PerPage: any integer is taken, clamped, so the
// schema states no minimum or maximum a client would refuse on.
func perPage() constraint {
	return func(s *object) {
		s.set("default", rules.DefaultPerPage)
		describe(s, fmt.Sprintf("Default %d; a value outside 1 to %d is clamped to that range.", rules.DefaultPerPage, rules.MaxPerPage))
	}
}

// sessionRefs documents a list of session references (sessionref):
// Swagger 2.0 has no "integer or string", so a sentence says it.
func sessionRefs() constraint {
	return func(s *object) {
		describe(s, "Each an id, as a JSON number or a string of digits, or a slug.")
	}
}

// event lists the machine's events with the states each fires from and
// leads to, its guards and what it means.
func event() constraint {
	return func(s *object) {
		enum(s, rules.Events())
		var b strings.Builder
		b.WriteString("Each event fires only from the states listed, and only when its guards hold (docs/state-machine.md):")
		for _, t := range rules.Machine() {
			fmt.Fprintf(&b, "\n- %s (%s → %s", t.Event, strings.Join(t.From, ", "), t.To)
			if len(t.Guards) > 0 {
				fmt.Fprintf(&b, "; guard: %s", strings.Join(t.Guards, ", "))
			}
			fmt.Fprintf(&b, "): %s", t.Doc)
		}
		describe(s, b.String())
	}
}
