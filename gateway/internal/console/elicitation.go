package console

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// elicitationView is what the session page's elicitation partial
// (templates/elicitation.html) shows: the question the agent is blocked
// on, with a form built from its requested schema, and the banner of one
// that went unanswered.
type elicitationView struct {
	Pending *lifecyclev1.Elicitation
	Fields  []elicitationField
	// Unreadable says why the pending question could not be read.
	Unreadable string
	Lost       *lifecyclev1.LostElicitation
}

// elicitationField is one input of the answer's form: a property of the
// requested schema.
type elicitationField struct {
	Name, Label, Description string
	// Input is the HTML input type (text, email, url, date, number,
	// checkbox), or "select" for an enum.
	Input    string
	Options  []string
	Required bool
	// Min, Max, Step bound a number; MinLength, MaxLength a text.
	Min, Max, Step       string
	MinLength, MaxLength string
}

// elicitationFieldPrefix names the answer form's inputs: content.<property>.
const elicitationFieldPrefix = "content."

// elicitationView reads what session s's page shows about elicitations:
// nil when there is nothing to show.
func (h *Handler) elicitationView(ctx context.Context, s *lifecyclev1.Session) *elicitationView {
	v := &elicitationView{Lost: s.GetLostElicitation()}
	if s.GetBlockedOnElicitation() {
		resp, err := h.clients.Lifecycle.ListElicitations(ctx, &lifecyclev1.ListElicitationsRequest{SessionId: strconv.FormatInt(s.GetId(), 10)})
		switch {
		case err != nil:
			v.Unreadable = grpcerr.From("lifecycle", err).Message
		case len(resp.GetElicitations()) > 0:
			v.Pending = resp.GetElicitations()[0]
			v.Fields = elicitationFields(v.Pending.GetRequestedSchema())
		default:
			v.Unreadable = "The agent is blocked on a question Zimmer was not told, so it cannot be answered here; send it a message instead."
		}
	}
	if v.Pending == nil && v.Unreadable == "" && v.Lost == nil {
		return nil
	}
	return v
}

// elicitationFields are the inputs of schema's properties, in name order.
func elicitationFields(schema *structpb.Struct) []elicitationField {
	m := schema.AsMap()
	props, _ := m["properties"].(map[string]any)
	required := map[string]bool{}
	if list, ok := m["required"].([]any); ok {
		for _, n := range list {
			if name, ok := n.(string); ok {
				required[name] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	fields := make([]elicitationField, 0, len(names))
	for _, name := range names {
		def, _ := props[name].(map[string]any)
		f := elicitationField{Name: elicitationFieldPrefix + name, Label: name, Required: required[name], Input: "text"}
		if title, ok := def["title"].(string); ok && title != "" {
			f.Label = title
		}
		f.Description, _ = def["description"].(string)
		switch def["type"] {
		case "boolean":
			f.Input, f.Required = "checkbox", false // unchecked is an answer: false
		case "number", "integer":
			f.Input, f.Step = "number", "any"
			if def["type"] == "integer" {
				f.Step = "1"
			}
			f.Min, f.Max = numberAttr(def["minimum"]), numberAttr(def["maximum"])
		default:
			if enum, ok := def["enum"].([]any); ok {
				f.Input = "select"
				for _, o := range enum {
					f.Options = append(f.Options, fmt.Sprint(o))
				}
			}
			switch def["format"] {
			case "email":
				f.Input = "email"
			case "uri":
				f.Input = "url"
			case "date":
				f.Input = "date"
			}
			f.MinLength, f.MaxLength = numberAttr(def["minLength"]), numberAttr(def["maxLength"])
		}
		fields = append(fields, f)
	}
	return fields
}

func numberAttr(v any) string {
	if n, ok := v.(float64); ok {
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	return ""
}

// answerElicitation sends the human's answer to the question the agent
// is blocked on: the button pressed is the action, and with accept the
// form's content.<property> inputs, read as the schema types them, are the
// content. Lifecycle checks it against the schema; its refusal is shown on
// the page.
func (h *Handler) answerElicitation(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	id, eid := r.PathValue("id"), r.PathValue("eid")
	req := &lifecyclev1.AnswerElicitationRequest{SessionId: id, ElicitationId: eid, Action: r.PostForm.Get("action")}
	if req.GetAction() == rules.ElicitAccept {
		content, err := h.answerContent(ctx, id, eid, r)
		if err != nil {
			h.failed(w, r, "lifecycle", err)
			return
		}
		req.Content = content
	}
	resp, err := h.clients.Lifecycle.AnswerElicitation(ctx, req)
	if err != nil {
		p := grpcerr.From("lifecycle", err)
		if p.Internal() {
			h.failed(w, r, "lifecycle", err)
			return
		}
		h.renderSession(w, r, cookie, in, p.HTTPStatus, func(d *sessionData) { d.Refusal = p.Message })
		return
	}
	h.setFlash(w, r, resp.GetMessage())
	http.Redirect(w, r, fmt.Sprintf("/console/sessions/%d", resp.GetSession().GetId()), http.StatusSeeOther)
}

// answerContent reads the form's content.<property> inputs as the pending
// question's schema types them: a number as a number, a checkbox as true
// or false, the rest as text. A number that does not parse is sent as
// text, for lifecycle's check to name.
func (h *Handler) answerContent(ctx context.Context, id, eid string, r *http.Request) (*structpb.Struct, error) {
	resp, err := h.clients.Lifecycle.ListElicitations(ctx, &lifecyclev1.ListElicitationsRequest{SessionId: id})
	if err != nil {
		return nil, err
	}
	types := map[string]string{}
	for _, e := range resp.GetElicitations() {
		if e.GetId() != eid {
			continue
		}
		props, _ := e.GetRequestedSchema().AsMap()["properties"].(map[string]any)
		for name, def := range props {
			d, _ := def.(map[string]any)
			types[name], _ = d["type"].(string)
		}
	}
	content := map[string]any{}
	for name, typ := range types {
		if typ == "boolean" {
			content[name] = r.PostForm.Get(elicitationFieldPrefix+name) != ""
		}
	}
	for key, values := range r.PostForm {
		name, ok := strings.CutPrefix(key, elicitationFieldPrefix)
		if !ok || len(values) == 0 || types[name] == "boolean" {
			continue
		}
		v := values[0]
		if v == "" {
			continue // left empty: not given (lifecycle says if it is required)
		}
		if typ := types[name]; typ == "number" || typ == "integer" {
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				content[name] = n
				continue
			}
		}
		content[name] = v
	}
	return structpb.NewStruct(content)
}
