// Package platform is the small shared kit every Zimmer service is built from:
// start-up (host), logging (slogx), configuration (envcfg), Postgres (pgdb,
// pgtest), event delivery (outbox, inbox), gRPC plumbing (grpcserver,
// grpcclient, apikey) and Temporal (temporalx). It holds no domain code.
package platform
