package service

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/lineage/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/clock"
)

// registerProvenance serves the ProvenanceService (the users roster and
// human messages) and the console's sign-ins on gs, walking hierarchies with hierarchy. adminUser is
// ZIMMER_ADMIN_USER; empty means the default, tadasant.
func registerProvenance(gs *grpc.Server, pool *pgxpool.Pool, logger *slog.Logger, hierarchy app.HierarchyWalker, adminUser string) {
	repo := store.NewProvenance(pool)
	clk := clock.System{}
	provenance := app.NewGetSessionProvenance(hierarchy, repo, repo)
	lineagev1.RegisterProvenanceServiceServer(gs, grpcapi.NewProvenance(logger, grpcapi.ProvenanceUseCases{
		ListUsers:            app.NewListUsers(repo),
		CreateUser:           app.NewCreateUser(repo),
		UpdateUser:           app.NewUpdateUser(repo),
		RecordHumanMessage:   app.NewRecordHumanMessage(repo, repo, adminUser, clk),
		GetSessionProvenance: provenance,
		GetPromptBlocks:      app.NewGetPromptBlocks(provenance, clk),
	}))
	// The console's sign-ins live here for every gateway replica (LN-11).
	lineagev1.RegisterConsoleSignInServiceServer(gs, grpcapi.NewSignIns(logger, app.NewConsoleSignIns(store.NewSignIns(pool), clk)))
}
