package devstack_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The dashboard, the alert rules and the list of what the binaries export
// live beside this module (deploy/grafana, deploy/prometheus); the
// operator's guide that every alert links to is docs/operations.md.
const (
	dashboardFile  = "../grafana/zimmer.json"
	alertsFile     = "../prometheus/alerts.yml"
	seriesFile     = "../prometheus/series.txt"
	prometheusFile = "../prometheus/prometheus.yml"
	operationsFile = "../../docs/operations.md"
)

// binaries are the scrape jobs, named after the binaries; "prometheus"
// stands for the series Prometheus makes itself (up).
var binaries = []string{"gateway", "lifecycle", "lineage", "queue", "runner", "notification", "prometheus"}

// exportedSeries reads series.txt: "<binary> <series>" per line, a
// leading "? " for a series that appears only once its event happened (a
// failure counter). e2e TestMetrics checks every other line against the
// real binaries' scrapes, so this list cannot claim what they do not serve.
func exportedSeries(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(seriesFile)
	require.NoError(t, err)
	names := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(line, "? "))
		require.Len(t, fields, 2, "%s:%d: want \"[? ]<binary> <series>\", got %q", seriesFile, n, line)
		require.Contains(t, binaries, fields[0], "%s:%d: unknown binary", seriesFile, n)
		names[fields[1]] = true
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, names)
	return names
}

// queried is every series name expr selects, parsed as PromQL.
func queried(t *testing.T, where, expr string) []string {
	t.Helper()
	e, err := metricsql.Parse(expr)
	require.NoError(t, err, "%s: %s", where, expr)
	var names []string
	metricsql.VisitAll(e, func(e metricsql.Expr) {
		me, ok := e.(*metricsql.MetricExpr)
		if !ok {
			return
		}
		for _, filters := range me.LabelFilterss {
			for _, f := range filters {
				if f.Label == "__name__" {
					require.False(t, f.IsRegexp || f.IsNegative, "%s: select series by their exact name: %s", where, expr)
					names = append(names, f.Value)
				}
			}
		}
	})
	require.NotEmpty(t, names, "%s queries no series: %s", where, expr)
	return names
}

type grafanaPanel struct {
	Title   string         `json:"title"`
	Type    string         `json:"type"`
	Panels  []grafanaPanel `json:"panels"` // a collapsed row's
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// The dashboard and the alerts query only series the binaries export (so
// neither rots when a metric is renamed), every alert says what it means
// and links to its section of docs/operations.md, and every panel queries
// something.
func TestDashboardAndAlertsQueryOnlyExportedSeries(t *testing.T) {
	t.Parallel()
	exported := exportedSeries(t)
	unknown := func(where, expr string) {
		t.Helper()
		for _, name := range queried(t, where, expr) {
			require.True(t, exported[name], "%s queries %s, which no binary exports (%s lists what they do)", where, name, seriesFile)
		}
	}

	b, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var dash struct {
		UID    string         `json:"uid"`
		Panels []grafanaPanel `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &dash))
	require.NotEmpty(t, dash.UID)
	var walk func([]grafanaPanel) int
	walk = func(panels []grafanaPanel) int {
		n := 0
		for _, p := range panels {
			n += walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
			for _, tg := range p.Targets {
				unknown("panel "+p.Title, tg.Expr)
			}
			n++
		}
		return n
	}
	require.Positive(t, walk(dash.Panels))

	b, err = os.ReadFile(alertsFile)
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&rules), "%s is a Prometheus rule file of alerts", alertsFile)
	ops, err := os.ReadFile(operationsFile)
	require.NoError(t, err)
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			where := "alert " + r.Alert
			require.Regexp(t, `^Zimmer[A-Za-z]+$`, r.Alert)
			require.False(t, slices.Contains(alerts, r.Alert), "%s is defined twice", where)
			alerts = append(alerts, r.Alert)
			require.Contains(t, []string{"page", "warn"}, r.Labels["severity"], "%s: severity page or warn", where)
			if r.For != "" {
				_, err := time.ParseDuration(r.For)
				require.NoError(t, err, "%s: for", where)
			}
			require.NotEmpty(t, r.Annotations["summary"], where)
			anchor := "docs/operations.md#" + strings.ToLower(r.Alert)
			require.Contains(t, r.Annotations["description"], anchor, "%s links to what to do", where)
			require.Regexp(t, regexp.MustCompile(`(?m)^#+ `+r.Alert+`$`), string(ops), "docs/operations.md has a section %s", r.Alert)
			unknown(where, r.Expr)
		}
	}
	require.NotEmpty(t, alerts)

	// The example Prometheus configuration scrapes one job per binary,
	// named as the queries expect, and loads these alerts.
	b, err = os.ReadFile(prometheusFile)
	require.NoError(t, err)
	var prom struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
		} `yaml:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal(b, &prom))
	require.Equal(t, []string{"alerts.yml"}, prom.RuleFiles)
	var jobs []string
	for _, sc := range prom.ScrapeConfigs {
		jobs = append(jobs, sc.JobName)
	}
	require.ElementsMatch(t, slices.DeleteFunc(slices.Clone(binaries), func(b string) bool { return b == "prometheus" }), jobs)
}
