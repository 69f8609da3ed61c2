package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	"github.com/zimmerhq/zimmer/gateway/internal/rest"
	"github.com/zimmerhq/zimmer/gateway/internal/wirejson"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// tools holds the tool handlers' dependencies.
type tools struct {
	lifecycle     lifecyclev1.LifecycleServiceClient
	triggers      lifecyclev1.TriggerServiceClient
	provenance    lineagev1.ProvenanceServiceClient
	runner        runnerv1.RunnerServiceClient
	queue         queuev1.QueueServiceClient
	notifications notificationv1.NotificationServiceClient
	logger        *slog.Logger
	now           func() time.Time
}

// counts writes numbers in descriptions as people read them (500,000).
var counts = message.NewPrinter(language.English)

// startSessionArgs are start_session's arguments: CreateSessionRequest's
// fields, the same as POST /api/v1/sessions takes.
var startSessionArgs = fieldNames(&lifecyclev1.CreateSessionRequest{})

// getSessionArgs are get_session's: GetSessionRequest's fields,
// include_logs and include_transcript, which the gateway handles.
var getSessionArgs = append(fieldNames(&lifecyclev1.GetSessionRequest{}), "include_logs", "include_transcript")

func startSessionTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolStartSession,
		mcpgo.WithToolTitle("Start a session"),
		mcpgo.WithDescription("Start a new Zimmer session: an agent works on `prompt` in a clone of `git_root`. "+
			"The session starts in the \""+rules.StatusWaiting+"\" status; the result shows it with its numeric id. "+
			"Same parameters as POST /api/v1/sessions."),
		mcpgo.WithString("prompt", mcpgo.Required(), mcpgo.Description(counts.Sprintf("The task for the agent; at most %d characters.", rules.MaxPromptChars))),
		mcpgo.WithString("git_root", mcpgo.Required(), mcpgo.Description("The repository the session's clone is made from.")),
		mcpgo.WithString("branch", mcpgo.Description("The branch (or tag) to work on: a git ref name, like main or release/1.2.")),
		mcpgo.WithString("subdirectory", mcpgo.Description("The directory inside the repository to work in: a relative path that stays inside it, like services/api.")),
		mcpgo.WithString("title", mcpgo.Description("A short human-readable title.")),
		mcpgo.WithString("slug", mcpgo.Description("Optional handle that addresses the session like its id: "+rules.SlugShape+".")),
		mcpgo.WithString("goal", mcpgo.Description(counts.Sprintf("What done looks like; at most %d characters.", rules.MaxGoalChars))),
		mcpgo.WithString("agent_root", mcpgo.Description("The agent configuration root to run.")),
		mcpgo.WithString("agent_runtime", mcpgo.Enum(rules.AgentRuntimes()...),
			mcpgo.Description("The agent runtime to run; omit it for the runner's default.")),
		mcpgo.WithInteger("parent_session_id", mcpgo.Description("Id of the session spawning this one; the new session inherits its genesis.")),
		mcpgo.WithString("scheduling_class", mcpgo.Enum(rules.SchedulingClasses()...),
			mcpgo.Description(fmt.Sprintf("%q (default) or %q.", rules.SchedulingPriority, rules.SchedulingSpot))),
		mcpgo.WithInteger("precedence", mcpgo.Description("Ordering among sessions of the same scheduling class.")),
		mcpgo.WithObject("custom_metadata", mcpgo.Description("A free-form JSON object stored with the session.")),
		mcpgo.WithArray("mcp_tool_groups", mcpgo.Items(map[string]any{"type": "string", "enum": rules.ToolGroups()}),
			mcpgo.Description("The MCP tool groups the session's credentials open: \""+rules.ToolGroupSelfSession+"\" (its own session's tools; every "+
				"credential has them) and \""+rules.ToolGroupSessions+"\" (read every session, start children of its own). Default [\""+
				rules.ToolGroupSessions+"\"].")),
		mcpgo.WithBoolean("push_notifications", mcpgo.Description(fmt.Sprintf("Whether the operator is pushed a notification when the session "+
			"pauses and waits for its next message (once the pause has lasted a while). Default %t: opt a session in. A failure is pushed either way.",
			rules.DefaultPushNotifications))),
		mcpgo.WithReadOnlyHintAnnotation(false),
		mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithIdempotentHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

func getSessionTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolGetSession,
		mcpgo.WithToolTitle("Get a session"),
		mcpgo.WithDescription("Show one session: its status and fields as markdown (with its status summary — where its work stood "+
			"when Zimmer last summarised it, what that covers — once one was written, and the GitHub pull requests its agent opened, each open, merged or closed), followed by the full session as JSON, then the "+
			"messages queued for it that are not delivered (pending ones in delivery order, and undelivered ones: accepted, "+
			"never delivered, retired when the session was archived) and its provenance."),
		mcpgo.WithString("session_id", mcpgo.Required(), mcpgo.Description(`The session's numeric id (e.g. "42") or its slug.`)),
		mcpgo.WithBoolean("include_logs", mcpgo.Description("Also show the session's timeline: every transition, warning and refusal.")),
		mcpgo.WithBoolean("include_transcript", mcpgo.Description(counts.Sprintf(
			"Also show the last turn's transcript: what the agent printed, its first %d lines.", TranscriptLines))),
		mcpgo.WithReadOnlyHintAnnotation(true),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

func (t *tools) startSession(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a := readArgs(req, startSessionArgs)
	in := &lifecyclev1.CreateSessionRequest{}
	a.into(in, startSessionArgs...)
	if res := a.problem(); res != nil {
		return res, nil
	}
	resp, err := t.lifecycle.CreateSession(ctx, in)
	if err != nil {
		return t.failure(ctx, ToolStartSession, err), nil
	}
	return t.sessionResult(ctx, OutcomeSessionStarted, "", resp.GetSession(), resp), nil
}

func (t *tools) getSession(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a := readArgs(req, getSessionArgs)
	in := &lifecyclev1.GetSessionRequest{}
	a.into(in, getSessionArgs...)
	withLogs := a.flag("include_logs")
	withTranscript := a.flag("include_transcript")
	if res := a.problem(); res != nil {
		return res, nil
	}
	ref := in.GetSessionId()
	resp, err := t.lifecycle.GetSession(ctx, in)
	if err != nil {
		return t.failure(ctx, ToolGetSession, err), nil
	}
	// Lifecycle leaves the queue to the queue: the gateway fills it in.
	queued := "" // the section, when there is a queue to ask
	if t.queue != nil {
		var ok bool
		resp.EnqueuedMessages, ok = rest.DetailEnqueuedMessages(ctx, t.queue, resp.GetSession().GetId(), t.logger)
		queued = queueSection(resp.GetEnqueuedMessages(), ok)
	}
	res := t.sessionResult(ctx, "", "", resp.GetSession(), resp)
	if pending := t.elicitationSection(ctx, resp.GetSession()); pending != "" && !res.IsError {
		appendText(res, "\n"+pending)
	}
	if queued != "" && !res.IsError {
		appendText(res, "\n"+queued)
	}
	if !res.IsError {
		// Always, not behind a flag: the empty record is the most
		// important reading, and must not look like a forgotten option.
		appendText(res, "\n"+t.provenanceSections(ctx, resp.GetSession().GetId()))
	}
	if withLogs && !res.IsError {
		appendText(res, "\n"+t.timelineSection(ctx, ref))
	}
	if withTranscript && !res.IsError {
		appendText(res, "\n"+t.transcriptSection(ctx, resp.GetSession().GetId()))
	}
	return res, nil
}

// timelineSection renders the session's timeline, oldest first.
func (t *tools) timelineSection(ctx context.Context, ref string) string {
	tl, err := t.lifecycle.GetSessionTimeline(ctx, &lifecyclev1.GetSessionTimelineRequest{SessionId: ref})
	if err != nil {
		return "### Timeline\n\nUnavailable: " + grpcerr.From("lifecycle", err).Message
	}
	var b strings.Builder
	b.WriteString("### Timeline\n\n")
	if len(tl.GetTimeline()) == 0 {
		b.WriteString("No entries yet.\n")
	}
	for _, l := range tl.GetTimeline() {
		fmt.Fprintf(&b, "- %s [%s] %s\n", l.GetCreatedAt().AsTime().UTC().Format(time.RFC3339), l.GetKind(), l.GetMessage())
	}
	return b.String()
}

// failure reports a lifecycle error as a tool error the model can act on.
func (t *tools) failure(ctx context.Context, tool string, err error) *mcpgo.CallToolResult {
	return t.failureFrom(ctx, tool, "lifecycle", err)
}

// failureFrom reports an error of service ("queue", ...) as a tool error,
// worded as REST words it (grpcerr).
func (t *tools) failureFrom(ctx context.Context, tool, service string, err error) *mcpgo.CallToolResult {
	p := grpcerr.From(service, err)
	if p.Internal() {
		t.logger.ErrorContext(ctx, "MCP tool call failed", "tool", tool, "code", p.Code.String(), "error", err)
	}
	if p.Reason != "" {
		// The refusal's code first, as REST's body carries it.
		return mcpgo.NewToolResultError(p.Reason + ": " + p.Message)
	}
	return mcpgo.NewToolResultError(p.Message)
}

// noQueue is the tool error of a queue call on a gateway without one.
const noQueue = "the queue service is not configured on this gateway"

// jsonResult is a's markdown followed by resp as the JSON REST answers, in
// the text (a TextContent) and as structured content.
func (t *tools) jsonResult(ctx context.Context, a answer, resp proto.Message) *mcpgo.CallToolResult {
	body, err := wirejson.NewMarshaler().Marshal(resp)
	if err != nil {
		t.logger.ErrorContext(ctx, "render a response as JSON", "error", err)
		return mcpgo.NewToolResultError("internal error rendering the answer; retry, and report it if it persists")
	}
	return mcpgo.NewToolResultStructured(json.RawMessage(body), a.markdown()+"\n```json\n"+string(body)+"\n```")
}

// sessionResult is s in markdown, headed by what became of it (outcome;
// "" for the session shown as it is) with the service's message after its
// fields, then resp as JSON, both in the text and as structured content.
func (t *tools) sessionResult(ctx context.Context, outcome, message string, s *lifecyclev1.Session, resp proto.Message) *mcpgo.CallToolResult {
	body, err := wirejson.NewMarshaler().Marshal(resp)
	if err != nil {
		t.logger.ErrorContext(ctx, "render session as JSON", "error", err)
		return mcpgo.NewToolResultError("internal error rendering the session; retry, and report it if it persists")
	}
	return mcpgo.NewToolResultStructured(json.RawMessage(body), renderSession(outcome, message, s, body))
}
