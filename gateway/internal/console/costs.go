package console

import (
	"context"
	"net/http"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

// costsData is the Costs page: the range asked for and the runner's sums.
type costsData struct {
	From, To, SessionID string
	Costs               *runnerv1.GetCostsResponse
}

// costs is the Costs page (docs/costs.md): GetCosts over the range and
// session the query names (from, to, session_id), as GET /api/v1/costs
// reads them; a bad range is the runner's refusal, in its words.
func (h *Handler) costs(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	q := r.URL.Query()
	req := &runnerv1.GetCostsRequest{From: q.Get("from"), To: q.Get("to"), SessionId: q.Get("session_id")}
	resp, err := h.clients.Runner.GetCosts(ctx, req)
	if err != nil {
		h.failed(w, r, "runner", err)
		return
	}
	h.render(w, r, http.StatusOK, "costs", h.signedInPage(ctx, w, r, in, "Costs",
		costsData{From: resp.GetFrom(), To: resp.GetTo(), SessionID: req.GetSessionId(), Costs: resp}))
}

// costTable is one table of the Costs page: its lines and what keys them
// ("" for the total, else kind, tool, day or session).
type costTable struct {
	Key   string
	Lines []*runnerv1.CostLine
}

// costRows makes a costTable of one line or many.
func costRows(key string, lines any) costTable {
	switch l := lines.(type) {
	case *runnerv1.CostLine:
		if l == nil {
			l = &runnerv1.CostLine{}
		}
		return costTable{Key: key, Lines: []*runnerv1.CostLine{l}}
	case []*runnerv1.CostLine:
		return costTable{Key: key, Lines: l}
	}
	return costTable{Key: key}
}
