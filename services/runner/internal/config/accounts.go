package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// Account is one login of a runtime's pool, from RUNNER_ACCOUNTS_FILE:
// the login (secrets included) the agent's process runs under, and the
// quota targets the pool holds it to.
type Account struct {
	Login   agent.Login
	Targets []domain.QuotaTarget
}

// LogValue is the login's: names, never secrets.
func (a Account) LogValue() slog.Value { return a.Login.LogValue() }

// Domain is the account as the pool decides on it: no secrets.
func (a Account) Domain() domain.Account {
	return domain.Account{Runtime: a.Login.Runtime, Name: a.Login.Name, Targets: a.Targets}
}

// accountsFile is RUNNER_ACCOUNTS_FILE's shape:
//
//	{"accounts": [
//	  {"name": "team-a", "runtime": "claude_code", "config_dir": "/srv/logins/team-a",
//	   "env": {"CLAUDE_CODE_OAUTH_TOKEN": "…"},
//	   "quota_targets": [{"window": "5h", "max_turns": 200}, {"window": "168h", "max_turns": 1500}]}
//	]}
type accountsFile struct {
	Accounts []struct {
		Name      string            `json:"name"`
		Runtime   string            `json:"runtime"`
		ConfigDir string            `json:"config_dir"`
		Env       map[string]string `json:"env"`

		QuotaTargets []struct {
			Window   string `json:"window"`
			MaxTurns int    `json:"max_turns"`
		} `json:"quota_targets"`
	} `json:"accounts"`
}

var (
	accountName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	envName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// LoadAccounts reads the deployer's login pools from path; "" is no file:
// every runtime runs under its ambient login. Every problem is reported
// at once, naming the account; no secret is ever quoted.
func LoadAccounts(path string) ([]Account, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("RUNNER_ACCOUNTS_FILE: %w", err)
	}
	accounts, err := ParseAccounts(data)
	if err != nil {
		return nil, fmt.Errorf("RUNNER_ACCOUNTS_FILE %s: %w", path, err)
	}
	return accounts, nil
}

// ParseAccounts reads an accounts file's JSON.
func ParseAccounts(data []byte) ([]Account, error) {
	var f accountsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		// A syntax error's offset says where; its text never quotes a value.
		return nil, fmt.Errorf("not an accounts file (want {\"accounts\": [{\"name\", \"runtime\", \"config_dir\", \"env\", \"quota_targets\"}]}): %w", err)
	}
	var (
		errs []error
		out  []Account
		seen = map[string]bool{}
	)
	for i, a := range f.Accounts {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("account %d (%q): %s", i+1, a.Name, fmt.Sprintf(format, args...)))
		}
		if !accountName.MatchString(a.Name) {
			bad("name must be 1–63 letters, digits, '.', '_' or '-', starting with a letter or digit")
		}
		if a.Name == domain.AmbientAccount {
			bad("%q names the runtime's own login; choose another name", domain.AmbientAccount)
		}
		if !slices.Contains(rules.AgentRuntimes(), a.Runtime) {
			bad("runtime %q is not one of %s", a.Runtime, strings.Join(rules.AgentRuntimes(), ", "))
		}
		key := a.Runtime + "/" + a.Name
		if seen[key] {
			bad("a second %s account of that name", a.Runtime)
		}
		seen[key] = true
		if a.ConfigDir != "" && !filepath.IsAbs(a.ConfigDir) {
			bad("config_dir must be an absolute path")
		}
		if a.ConfigDir != "" && agent.ConfigDirVar(a.Runtime) == "" {
			bad("runtime %s has no configuration directory; set its login through env", a.Runtime)
		}
		if a.ConfigDir == "" && len(a.Env) == 0 {
			bad("give config_dir or env: an account that sets nothing is the ambient login")
		}
		for name := range a.Env {
			switch {
			case !envName.MatchString(name):
				bad("env name %q is not a variable name", name)
			case agent.Scrubbed(name) && name != agent.ConfigDirVar(agent.RuntimeDemo):
				bad("env %s is the runner's own configuration, never an agent's", name)
			}
		}
		targets := make([]domain.QuotaTarget, 0, len(a.QuotaTargets))
		for j, q := range a.QuotaTargets {
			w, err := time.ParseDuration(q.Window)
			if err != nil || w <= 0 {
				bad("quota_targets[%d].window %q is not a positive duration like 5h or 168h", j, q.Window)
			}
			if q.MaxTurns <= 0 {
				bad("quota_targets[%d].max_turns must be positive", j)
			}
			targets = append(targets, domain.QuotaTarget{Window: w, MaxTurns: q.MaxTurns})
		}
		out = append(out, Account{
			Login:   agent.Login{Runtime: a.Runtime, Name: a.Name, ConfigDir: a.ConfigDir, Env: a.Env},
			Targets: targets,
		})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// TurnRecordRetention is how long the pool keeps a turn's record: past
// the longest window any account is held to (a week when none is longer),
// and an hour more, so a count never misses a turn still inside one.
func TurnRecordRetention(accounts []Account) time.Duration {
	keep := 7 * 24 * time.Hour
	for _, a := range accounts {
		for _, t := range a.Targets {
			keep = max(keep, t.Window)
		}
	}
	return keep + time.Hour
}
