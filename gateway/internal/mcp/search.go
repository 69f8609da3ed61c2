package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// ToolQuickSearchSessions finds sessions an agent does not know the id of.
const ToolQuickSearchSessions = "quick_search_sessions"

// quickSearchArgs are ListSessionsRequest's fields, the same as GET
// /api/v1/sessions takes.
var quickSearchArgs = fieldNames(&lifecyclev1.ListSessionsRequest{})

func quickSearchSessionsTool() mcpgo.Tool {
	statuses := rules.Statuses()
	return mcpgo.NewTool(ToolQuickSearchSessions,
		mcpgo.WithToolTitle("Search sessions"),
		mcpgo.WithDescription("Find sessions by free text and status, newest first: each result is one compact entry, its id, status, "+
			counts.Sprintf("title and slug with the first %d characters of its prompt and notes; get_session shows a session whole. ", rules.ListPreviewChars)+
			"Paged: the result says which page it is and how many there are."),
		mcpgo.WithString("q", mcpgo.Description("Words to find, case-insensitively, in the title, prompt, slug or notes.")),
		mcpgo.WithAny("status", oneOrMany(statuses), mcpgo.Description(
			"One status or a list of them ("+strings.Join(statuses, ", ")+"); none means every status but archived "+
				"(the trash), unless show_archived. A search never widens the statuses: to search the trash, ask for archived.")),
		mcpgo.WithBoolean("show_archived", mcpgo.Description("With no status given, include archived sessions too (every status).")),
		mcpgo.WithString("agent_root", mcpgo.Description("Only sessions of this agent configuration root.")),
		mcpgo.WithString("genesis", mcpgo.Description("Only sessions of this genesis (api, or what a parent passed down).")),
		mcpgo.WithString("scheduling_class", mcpgo.Enum(rules.SchedulingClasses()...), mcpgo.Description("Only sessions of this scheduling class.")),
		mcpgo.WithString("transcript", mcpgo.Description("Only sessions whose transcript holds these words as a phrase "+
			"(case-insensitively, whole words; at most 200 characters). Matches beyond the 1,000 most recently matching sessions are not looked at.")),
		mcpgo.WithBoolean("starred", mcpgo.Description("true: only starred sessions; false: only sessions not starred.")),
		mcpgo.WithInteger("category_id", mcpgo.Min(0), mcpgo.Description("Only the sessions in this category (manage_categories list); 0: the uncategorized ones.")),
		mcpgo.WithBoolean("skip_frozen_categories", mcpgo.Description("Leave out the sessions in frozen categories.")),
		mcpgo.WithString("view", mcpgo.Enum(rules.ViewRanked), mcpgo.Description(
			"ranked: the spot queue in the order it will run — turns waiting for a turn slot (priority first) and spot sleepers "+
				"the spot scheduler will resume, highest precedence first — each with its place (slot_wait); only scheduling_class "+
				"and the paging apply to it. Left out: every session, newest first.")),
		mcpgo.WithInteger("page", mcpgo.Min(1), mcpgo.Description("The page to show, from 1 (the default).")),
		mcpgo.WithInteger("per_page", mcpgo.Description(counts.Sprintf(
			"Results per page: %d when left out; a value outside 1 to %d is clamped to that range.", rules.DefaultPerPage, rules.MaxPerPage))),
		mcpgo.WithReadOnlyHintAnnotation(true),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

// oneOrMany is the schema of a string from words, or a list of them.
func oneOrMany(words []string) mcpgo.PropertyOption {
	return func(schema map[string]any) {
		one := map[string]any{"type": "string", "enum": words}
		schema["anyOf"] = []any{one, map[string]any{"type": "array", "items": one}}
	}
}

// searchResult is quick_search_sessions' structured content: compact
// entries, never a whole prompt.
type searchResult struct {
	Sessions   []searchEntry `json:"sessions"`
	Page       int32         `json:"page"`
	PerPage    int32         `json:"per_page"`
	TotalCount int64         `json:"total_count"`
	TotalPages int32         `json:"total_pages"`
}

type searchEntry struct {
	ID              int64  `json:"id"`
	Status          string `json:"status"`
	Title           string `json:"title"`
	Slug            string `json:"slug"`
	SchedulingClass string `json:"scheduling_class"`
	ParentSessionID *int64 `json:"parent_session_id"`
	UpdatedAt       string `json:"updated_at"`
	PromptPreview   string `json:"prompt_preview"`
	NotesPreview    string `json:"notes_preview"`
	// SlotWait says why and where it waits to run, while it does.
	SlotWait *slotWaitEntry `json:"slot_wait,omitempty"`
}

type slotWaitEntry struct {
	Reason   string `json:"reason"`
	Position int32  `json:"position"`
	Since    string `json:"since"`
}

func slotWaitOf(w *lifecyclev1.SlotWait) *slotWaitEntry {
	if w == nil {
		return nil
	}
	return &slotWaitEntry{Reason: w.GetReason(), Position: w.GetPosition(), Since: w.GetSince().AsTime().UTC().Format(time.RFC3339)}
}

func (t *tools) quickSearchSessions(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a := readArgs(req, quickSearchArgs)
	a.oneAsList("status")
	in := &lifecyclev1.ListSessionsRequest{}
	a.into(in, quickSearchArgs...)
	if res := a.problem(); res != nil {
		return res, nil
	}
	resp, err := t.lifecycle.ListSessions(ctx, in)
	if err != nil {
		return t.failure(ctx, ToolQuickSearchSessions, err), nil
	}
	p := resp.GetPagination()
	out := searchResult{Sessions: []searchEntry{}, Page: p.GetPage(), PerPage: p.GetPerPage(), TotalCount: p.GetTotalCount(), TotalPages: p.GetTotalPages()}
	for _, s := range resp.GetSessions() {
		e := searchEntry{
			ID: s.GetId(), Status: s.GetStatus(), Title: s.GetTitle(), Slug: s.GetSlug(), SchedulingClass: s.GetSchedulingClass(),
			ParentSessionID: s.ParentSessionId, PromptPreview: preview(s.GetPrompt()), NotesPreview: preview(s.GetNotes()),
			SlotWait: slotWaitOf(s.GetSlotWait()),
		}
		if s.GetUpdatedAt() != nil {
			e.UpdatedAt = s.GetUpdatedAt().AsTime().UTC().Format(time.RFC3339)
		}
		out.Sessions = append(out.Sessions, e)
	}
	body, err := json.Marshal(out)
	if err != nil {
		t.logger.ErrorContext(ctx, "render search results as JSON", "error", err)
		return mcpgo.NewToolResultError("internal error rendering the results; retry, and report it if it persists"), nil
	}
	return mcpgo.NewToolResultStructured(json.RawMessage(body), renderSearch(in, out)), nil
}

// renderSearch is the results as markdown: the counts as fields, then one
// compact entry a session.
func renderSearch(in *lifecyclev1.ListSessionsRequest, r searchResult) string {
	a := outcome(OutcomeSessions).field("total_count", r.TotalCount)
	if r.TotalPages > 0 {
		a = a.field("page", fmt.Sprintf("%d of %d", r.Page, r.TotalPages))
	}
	return a.say(searchText(in, r)).markdown()
}

// searchText is the results in words, one compact entry a session.
func searchText(in *lifecyclev1.ListSessionsRequest, r searchResult) string {
	var b strings.Builder
	if len(r.Sessions) == 0 {
		b.WriteString("No sessions match")
		if r.TotalCount > 0 {
			fmt.Fprintf(&b, " on page %d; there are %d pages", r.Page, r.TotalPages)
		} else if len(in.GetStatus()) > 0 {
			b.WriteString(" with status " + strings.Join(in.GetStatus(), " or ") + "; leave status out to search every status")
		}
		b.WriteString(".\n")
		return b.String()
	}
	order := "newest first"
	if in.GetView() == rules.ViewRanked {
		order = "in the order they will run"
	}
	fmt.Fprintf(&b, "%s, page %d of %d (%d per page), %s. get_session shows one whole.\n",
		plural(r.TotalCount, "session matches", "sessions match"), r.Page, r.TotalPages, r.PerPage, order)
	for _, e := range r.Sessions {
		title := e.Title
		if title == "" {
			title = fmt.Sprintf("Session #%d", e.ID)
		}
		fmt.Fprintf(&b, "\n- #%d [%s] %s", e.ID, e.Status, oneLine(title))
		if e.Slug != "" {
			fmt.Fprintf(&b, " (slug %s)", e.Slug)
		}
		if e.UpdatedAt != "" {
			fmt.Fprintf(&b, ", updated %s", e.UpdatedAt)
		}
		if w := e.SlotWait; w != nil {
			fmt.Fprintf(&b, ", waits to run: %s, number %d in line since %s", w.Reason, w.Position, w.Since)
		}
		b.WriteString("\n")
		if e.PromptPreview != "" {
			fmt.Fprintf(&b, "  prompt: %s\n", oneLine(e.PromptPreview))
		}
		if e.NotesPreview != "" {
			fmt.Fprintf(&b, "  notes: %s\n", oneLine(e.NotesPreview))
		}
	}
	if r.Page < r.TotalPages {
		fmt.Fprintf(&b, "\nMore: page %d of %d (call again with page %d).\n", r.Page+1, r.TotalPages, r.Page+1)
	}
	return b.String()
}

// preview is text cut to rules.ListPreviewChars characters, ending in
// rules.PreviewEllipsis when cut. Lifecycle's lists already carry previews;
// cutting here too keeps a result compact whatever a list answers.
func preview(text string) string {
	if utf8.RuneCountInString(text) <= rules.ListPreviewChars {
		return text
	}
	text = strings.TrimSuffix(text, rules.PreviewEllipsis)
	if utf8.RuneCountInString(text) <= rules.ListPreviewChars {
		return text + rules.PreviewEllipsis
	}
	return string([]rune(text)[:rules.ListPreviewChars]) + rules.PreviewEllipsis
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// oneAsList lets a list argument be given as a single value: "waiting"
// for ["waiting"].
func (a *args) oneAsList(name string) {
	v, ok := a.raw[name]
	if !ok {
		return
	}
	var one string
	if json.Unmarshal(v, &one) == nil {
		a.raw[name], _ = json.Marshal([]string{one})
	}
}
