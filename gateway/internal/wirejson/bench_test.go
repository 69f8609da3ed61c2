package wirejson_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/wirejson"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

// hierarchyResponse is a GetSessionHierarchy response of n nodes, shaped like
// a real one: a tree three children wide, roots without a parent (an unset
// optional, rendered as null), a few uncle edges.
func hierarchyResponse(n int) *lineagev1.GetSessionHierarchyResponse {
	h := &lineagev1.SessionHierarchy{
		OriginSessionId: 1000,
		RootSessionIds:  []int64{1000},
		Outline:         "1000 root\n  1001 child\n  1002 child",
	}
	for i := range n {
		node := &lineagev1.HierarchyNode{
			Id:              int64(1000 + i),
			Title:           fmt.Sprintf("Session %d: refactor the \"scheduler\" & friends", i),
			AgentRoot:       "/work/agents/zimmer",
			Status:          "running",
			Depth:           int32(i / 3),
			Current:         i == 0,
			Genesis:         "spawned",
			SchedulingClass: "interactive",
		}
		if i > 0 {
			node.ParentSessionId = proto.Int64(int64(1000 + (i-1)/3))
		}
		if i%5 == 0 {
			node.UncleSessionIds = []int64{int64(1000 + i/2), int64(1000 + i/4)}
		}
		h.Nodes = append(h.Nodes, node)
	}
	return &lineagev1.GetSessionHierarchyResponse{SessionHierarchy: h}
}

// BenchmarkMarshalHierarchy measures Marshal on a 150-node hierarchy, the
// gateway's largest common response.
func BenchmarkMarshalHierarchy(b *testing.B) {
	resp := hierarchyResponse(150)
	m := wirejson.NewMarshaler()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Marshal(resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProtojsonHierarchy is the floor BenchmarkMarshalHierarchy is
// compared against: protojson alone, with the gateway's options.
func BenchmarkProtojsonHierarchy(b *testing.B) {
	resp := hierarchyResponse(150)
	opts := wirejson.NewMarshaler().MarshalOptions
	b.ReportAllocs()
	for b.Loop() {
		if _, err := opts.Marshal(resp); err != nil {
			b.Fatal(err)
		}
	}
}
