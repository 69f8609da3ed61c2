// Package platform is the small shared kit every Zimmer service is built from:
// start-up (host), logging (slogx), configuration (envcfg), Postgres (pgdb,
// pgtest), event delivery (outbox, inbox), request validation errors
// (validation) and the time (clock), both stdlib-only so domain packages may
// use them, gRPC plumbing (grpcserver, grpcclient, grpcstatus, apikey) and
// Temporal (temporalx). It holds no domain code.
package platform
