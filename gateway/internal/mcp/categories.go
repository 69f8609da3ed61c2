package mcp

import (
	"context"
	"fmt"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// ToolManageCategories lists, creates, changes, reorders and deletes the
// deployment's categories (the sessions group), as /api/v1/categories
// does. Operator keys only: a session credential is refused by lifecycle.
const ToolManageCategories = "manage_categories"

// categoryActions are manage_categories' actions, each with the arguments
// it reads (the fields of its lifecycle request).
var categoryActions = toolActions{
	{"list", nil},
	{"create", []string{"name", "position", "frozen"}},
	{"update", []string{"category_id", "name", "position", "frozen"}},
	{"delete", []string{"category_id"}},
}

func manageCategoriesTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolManageCategories,
		mcpgo.WithToolTitle("Manage categories"),
		mcpgo.WithDescription("Categories group sessions on the operator's dashboard, in order; a frozen (parked) category's sessions are "+
			"left out of \"refresh all\" (a starred session is still refreshed by \"refresh starred\"). A session's title and category are "+
			"inferred on its first pauses while unset (never over one set by a human or an agent), from the categories not frozen. "+
			"list shows them in order; create adds one (last unless position); update renames it, freezes or thaws it (frozen), or "+
			"moves it to position (the others close up around it); delete removes it (its sessions become uncategorized). "+
			"Move a session with action_session move_to_category. Operator keys only."),
		mcpgo.WithString("action", mcpgo.Required(), mcpgo.Enum(categoryActions.names()...)),
		mcpgo.WithString("name", mcpgo.Description(fmt.Sprintf("create, update: the category's name, 1 to %d characters on one line, unique "+
			"without regard to case.", rules.MaxCategoryNameChars))),
		mcpgo.WithInteger("position", mcpgo.Min(1), mcpgo.Description("create, update: its 1-based place in the order; past the end means last.")),
		mcpgo.WithBoolean("frozen", mcpgo.Description("create, update: true parks it: \"refresh all\" skips its sessions.")),
		mcpgo.WithInteger("category_id", mcpgo.Min(1), mcpgo.Description("update, delete: the category's id (list shows them).")),
		mcpgo.WithDestructiveHintAnnotation(true),
		mcpgo.WithIdempotentHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

// categoryLine is one category as a markdown bullet.
func categoryLine(c *lifecyclev1.Category) string {
	line := fmt.Sprintf("%d. %s (#%d)", c.GetPosition(), c.GetName(), c.GetId())
	if c.GetFrozen() {
		line += ", frozen"
	}
	return line
}

func (t *tools) manageCategories(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a, act, res := categoryActions.read(req)
	if res != nil {
		return res, nil
	}
	if (act.name == "update" || act.name == "delete") && !a.has("category_id") {
		a.problems = append(a.problems, act.name+" needs category_id (list shows them)")
	}
	var (
		resp proto.Message
		lead answer
		err  error
	)
	switch act.name {
	case "list":
		in := &lifecyclev1.ListCategoriesRequest{}
		if res := a.decode(in, act.args); res != nil {
			return res, nil
		}
		var r *lifecyclev1.ListCategoriesResponse
		r, err = t.lifecycle.ListCategories(ctx, in)
		var b strings.Builder
		if len(r.GetCategories()) == 0 {
			b.WriteString("No categories.")
		} else {
			fmt.Fprintf(&b, "%d categories, in order:\n", len(r.GetCategories()))
		}
		for _, c := range r.GetCategories() {
			b.WriteString("\n" + categoryLine(c))
		}
		resp, lead = r, outcome(OutcomeCategories).say(b.String())
	case "create":
		in := &lifecyclev1.CreateCategoryRequest{}
		if res := a.decode(in, act.args); res != nil {
			return res, nil
		}
		var r *lifecyclev1.CreateCategoryResponse
		r, err = t.lifecycle.CreateCategory(ctx, in)
		resp, lead = r, outcome(OutcomeCategoryCreated).say(categoryLine(r.GetCategory()))
	case "update":
		in := &lifecyclev1.UpdateCategoryRequest{}
		if res := a.decode(in, act.args); res != nil {
			return res, nil
		}
		var r *lifecyclev1.UpdateCategoryResponse
		r, err = t.lifecycle.UpdateCategory(ctx, in)
		resp, lead = r, outcome(OutcomeCategoryUpdated).say(categoryLine(r.GetCategory()))
	case "delete":
		in := &lifecyclev1.DeleteCategoryRequest{}
		if res := a.decode(in, act.args); res != nil {
			return res, nil
		}
		var r *lifecyclev1.DeleteCategoryResponse
		r, err = t.lifecycle.DeleteCategory(ctx, in)
		resp, lead = r, outcome(OutcomeCategoryDeleted).id("category_id", in.GetCategoryId()).say("Its sessions are uncategorized.")
	}
	if err != nil {
		return t.failure(ctx, ToolManageCategories, err), nil
	}
	return t.jsonResult(ctx, lead, resp), nil
}
