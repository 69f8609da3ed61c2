package service

import (
	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/clients"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/infer"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
)

// runInference registers the title and category inference
// (session/<id>/infer) on zimmer-runner: the session's runtime answers in
// one-shot mode, as RUNNER_INFERENCE says. Lifecycle's effect starts it
// (grpcapi.Effects).
func (s *Service) runInference(cfg config.Config, lifecycle *clients.Lifecycle) error {
	a := cfg.Agents
	inferrers, err := infer.NewInferrers(cfg.Inference, a.DefaultRuntime, map[string]infer.Inferrer{
		agent.RuntimeDemo:       infer.Demo{},
		agent.RuntimeClaudeCode: infer.ClaudeCode{Path: a.ClaudePath, Model: a.ClaudeModel},
		agent.RuntimeCodex:      infer.Codex{Path: a.CodexPath, Model: a.CodexModel},
	})
	if err != nil {
		return err
	}
	acts := &infer.Activities{
		Sessions: lifecycle, Transcripts: store.NewTranscripts(s.Pool, transcript.DefaultLimits),
		Inferrers: inferrers, Costs: store.NewCosts(s.Pool), Logger: s.Logger,
	}
	acts.Register(s.Worker)
	return nil
}
