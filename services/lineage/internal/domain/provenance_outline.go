package domain

// provenanceOutline renders h's outline (Hierarchy.Outline, the one every
// surface uses) for the provenance renderers, with every session-written
// field neutralised first: a title must not be able to close a block or
// open a bullet any more than a message can.
func provenanceOutline(h Hierarchy) string {
	safe := h
	safe.Nodes = make([]HierarchyNode, len(h.Nodes))
	for i, n := range h.Nodes {
		n.Title = SanitizeInline(n.Title) // empty: the outline labels it "Session #N"
		n.AgentRoot = SanitizeInline(n.AgentRoot)
		n.Status = SanitizeInline(n.Status)
		n.Genesis = SanitizeInline(n.Genesis)
		n.SchedulingClass = SanitizeInline(n.SchedulingClass)
		safe.Nodes[i] = n
	}
	return safe.Outline()
}
