package clients

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/runner/internal/prompt"
)

// Lineage calls the lineage service as the runner (the connection carries
// the internal token): GetPromptBlocks is internal.
type Lineage struct {
	client lineagev1.ProvenanceServiceClient
}

// NewLineage returns the client over conn.
func NewLineage(conn grpc.ClientConnInterface) *Lineage {
	return &Lineage{client: lineagev1.NewProvenanceServiceClient(conn)}
}

// PromptBlocks renders the session's notes and provenance blocks.
func (l *Lineage) PromptBlocks(ctx context.Context, sessionID int64, notes string, viaMCP bool) (prompt.Blocks, error) {
	resp, err := l.client.GetPromptBlocks(ctx, &lineagev1.GetPromptBlocksRequest{
		SessionId: sessionID, SessionNotes: notes, ProvenanceViaMcpEnabled: viaMCP, RequireRecorded: true,
	})
	if status.Code(err) == codes.NotFound {
		// The session's created event has not reached lineage yet: it will,
		// so the turn waits for it (an Unavailable is asked again).
		return prompt.Blocks{}, status.Errorf(codes.Unavailable, "lineage has not recorded session %d yet: %s",
			sessionID, status.Convert(err).Message())
	}
	if err != nil {
		return prompt.Blocks{}, fmt.Errorf("lineage GetPromptBlocks of session %d: %w", sessionID, err)
	}
	return prompt.Blocks{
		SessionNotes: resp.GetSessionNotes(), SessionHierarchy: resp.GetSessionHierarchy(), HumanMessages: resp.GetHumanMessages(),
	}, nil
}
