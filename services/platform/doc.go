// Package platform is the small shared kit every Zimmer service is built from:
// start-up (host), logging (slogx), configuration (envcfg), Postgres (pgdb,
// pgtest), event delivery (outbox, inbox), request validation errors
// (validation), the time (clock) and the ids of a session's workflows
// (workflowid), all three stdlib-only so domain packages may use them, gRPC
// plumbing (grpcserver, grpcclient, grpcstatus, apikey) and Temporal
// (temporalx; periodic for every schedule, retention its sweeps that
// delete). It holds no domain code.
package platform
