package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	"github.com/zimmerhq/zimmer/gateway/internal/wirejson"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

// tools holds the tool handlers' dependencies.
type tools struct {
	lifecycle  lifecyclev1.LifecycleServiceClient
	provenance lineagev1.ProvenanceServiceClient
	logger     *slog.Logger
}

var startSessionArgs = []string{
	"prompt", "git_root", "branch", "subdirectory", "title", "slug", "goal", "agent_root",
	"agent_runtime", "parent_session_id", "scheduling_class", "precedence", "custom_metadata",
}

func startSessionTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolStartSession,
		mcpgo.WithToolTitle("Start a session"),
		mcpgo.WithDescription("Start a new Zimmer session: an agent works on `prompt` in a clone of `git_root`. "+
			"The session starts in the \"waiting\" status; the result shows it with its numeric id. "+
			"Same parameters as POST /api/v1/sessions."),
		mcpgo.WithString("prompt", mcpgo.Required(), mcpgo.Description("The task for the agent; at most 500,000 characters.")),
		mcpgo.WithString("git_root", mcpgo.Required(), mcpgo.Description("The repository the session's clone is made from.")),
		mcpgo.WithString("branch", mcpgo.Description("The branch to work on.")),
		mcpgo.WithString("subdirectory", mcpgo.Description("The directory inside the repository to work in.")),
		mcpgo.WithString("title", mcpgo.Description("A short human-readable title.")),
		mcpgo.WithString("slug", mcpgo.Description("Optional handle that addresses the session like its id: lowercase letters, digits and dashes, not all digits.")),
		mcpgo.WithString("goal", mcpgo.Description("What done looks like; at most 50,000 characters.")),
		mcpgo.WithString("agent_root", mcpgo.Description("The agent configuration root to run.")),
		mcpgo.WithString("agent_runtime", mcpgo.Description("The agent runtime to run.")),
		mcpgo.WithInteger("parent_session_id", mcpgo.Description("Id of the session spawning this one; the new session inherits its genesis.")),
		mcpgo.WithString("scheduling_class", mcpgo.Enum("priority", "spot"), mcpgo.Description(`"priority" (default) or "spot".`)),
		mcpgo.WithInteger("precedence", mcpgo.Description("Ordering among sessions of the same scheduling class.")),
		mcpgo.WithObject("custom_metadata", mcpgo.Description("A free-form JSON object stored with the session.")),
		mcpgo.WithReadOnlyHintAnnotation(false),
		mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithIdempotentHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

func getSessionTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolGetSession,
		mcpgo.WithToolTitle("Get a session"),
		mcpgo.WithDescription("Show one session: its status and fields as markdown, followed by the full session as JSON."),
		mcpgo.WithString("session_id", mcpgo.Required(), mcpgo.Description(`The session's numeric id (e.g. "42") or its slug.`)),
		mcpgo.WithBoolean("include_logs", mcpgo.Description("Also show the session's timeline: every transition, warning and refusal.")),
		mcpgo.WithReadOnlyHintAnnotation(true),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

func (t *tools) startSession(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a := newArgs(req, startSessionArgs)
	in := &lifecyclev1.CreateSessionRequest{
		Prompt:          a.str("prompt"),
		GitRoot:         a.str("git_root"),
		Branch:          a.str("branch"),
		Subdirectory:    a.str("subdirectory"),
		Title:           a.str("title"),
		Slug:            a.str("slug"),
		Goal:            a.str("goal"),
		AgentRoot:       a.str("agent_root"),
		AgentRuntime:    a.str("agent_runtime"),
		ParentSessionId: a.int64("parent_session_id"),
		SchedulingClass: a.str("scheduling_class"),
		Precedence:      a.int32("precedence"),
		CustomMetadata:  a.object("custom_metadata"),
	}
	if res := a.problem(); res != nil {
		return res, nil
	}
	resp, err := t.lifecycle.CreateSession(ctx, in)
	if err != nil {
		return t.failure(ctx, ToolStartSession, err), nil
	}
	s := resp.GetSession()
	return t.sessionResult(ctx, fmt.Sprintf("Started session #%d (status %s).", s.GetId(), s.GetStatus()), s, resp), nil
}

func (t *tools) getSession(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a := newArgs(req, []string{"session_id", "include_logs"})
	ref := a.ref("session_id")
	withLogs := a.boolean("include_logs")
	if res := a.problem(); res != nil {
		return res, nil
	}
	resp, err := t.lifecycle.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: ref})
	if err != nil {
		return t.failure(ctx, ToolGetSession, err), nil
	}
	res := t.sessionResult(ctx, "", resp.GetSession(), resp)
	if !res.IsError {
		// Always, not behind a flag: the empty record is the most
		// important reading, and must not look like a forgotten option.
		appendText(res, "\n"+t.provenanceSections(ctx, resp.GetSession().GetId()))
	}
	if withLogs && !res.IsError {
		appendText(res, "\n"+t.timelineSection(ctx, ref))
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

// failure reports a service error as a tool error the model can act on.
func (t *tools) failure(ctx context.Context, tool string, err error) *mcpgo.CallToolResult {
	p := grpcerr.From("lifecycle", err)
	if p.Internal() {
		t.logger.ErrorContext(ctx, "MCP tool call failed", "tool", tool, "code", p.Code.String(), "error", err)
	}
	return mcpgo.NewToolResultError(p.Message)
}

// sessionResult is the markdown rendering of s (after lead, when given)
// with resp as JSON, both in the text and as structured content.
func (t *tools) sessionResult(ctx context.Context, lead string, s *lifecyclev1.Session, resp proto.Message) *mcpgo.CallToolResult {
	body, err := wirejson.NewMarshaler().Marshal(resp)
	if err != nil {
		t.logger.ErrorContext(ctx, "render session as JSON", "error", err)
		return mcpgo.NewToolResultError("internal error rendering the session; retry, and report it if it persists")
	}
	text := renderSession(s, body)
	if lead != "" {
		text = lead + "\n\n" + text
	}
	return mcpgo.NewToolResultStructured(json.RawMessage(body), text)
}

// args reads a tool call's arguments, collecting every problem so the model
// can fix them in one retry.
type args struct {
	m        map[string]any
	problems []string
}

func newArgs(req mcpgo.CallToolRequest, accepted []string) *args {
	a := &args{m: req.GetArguments()}
	var unknown []string
	for k := range a.m {
		if !slices.Contains(accepted, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		a.problems = append(a.problems, fmt.Sprintf("unknown argument %q (accepted: %s)", k, strings.Join(accepted, ", ")))
	}
	return a
}

// problem is the tool error for the collected problems, nil without any.
func (a *args) problem() *mcpgo.CallToolResult {
	if len(a.problems) == 0 {
		return nil
	}
	return mcpgo.NewToolResultError("invalid arguments: " + strings.Join(a.problems, "; "))
}

func (a *args) str(name string) string {
	v, ok := a.m[name]
	if !ok || v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		a.problems = append(a.problems, fmt.Sprintf("%s must be a string", name))
	}
	return s
}

// integer reads a whole number in [lo, hi], given as a JSON number or a
// string of digits.
func (a *args) integer(name string, lo, hi int64) (int64, bool) {
	v, ok := a.m[name]
	if !ok || v == nil {
		return 0, false
	}
	bad := func() (int64, bool) {
		a.problems = append(a.problems, fmt.Sprintf("%s must be an integer between %d and %d, got %v", name, lo, hi, v))
		return 0, false
	}
	switch x := v.(type) {
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil || n < lo || n > hi {
			return bad()
		}
		return n, true
	case json.Number:
		n, err := x.Int64()
		if err != nil || n < lo || n > hi {
			return bad()
		}
		return n, true
	case float64:
		// float64(hi)+1 is exact for the bounds used here (2^31, 2^63).
		if x != math.Trunc(x) || x < float64(lo) || x >= float64(hi)+1 {
			return bad()
		}
		return int64(x), true
	default:
		return bad()
	}
}

func (a *args) int64(name string) *int64 {
	n, ok := a.integer(name, math.MinInt64, math.MaxInt64)
	if !ok {
		return nil
	}
	return &n
}

func (a *args) int32(name string) int32 {
	n, _ := a.integer(name, math.MinInt32, math.MaxInt32)
	return int32(n)
}

func (a *args) object(name string) *structpb.Struct {
	v, ok := a.m[name]
	if !ok || v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		a.problems = append(a.problems, fmt.Sprintf("%s must be a JSON object", name))
		return nil
	}
	s, err := structpb.NewStruct(obj)
	if err != nil {
		a.problems = append(a.problems, fmt.Sprintf("%s: %v", name, err))
		return nil
	}
	return s
}

// ref reads a session reference: a slug, or an id as a string or a number.
func (a *args) ref(name string) string {
	v, ok := a.m[name]
	if !ok || v == nil {
		return "" // the service says it is required
	}
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case float64, json.Number:
		n, _ := a.integer(name, 1, math.MaxInt64)
		return strconv.FormatInt(n, 10)
	default:
		a.problems = append(a.problems, fmt.Sprintf("%s must be a numeric id or a slug", name))
		return ""
	}
}
