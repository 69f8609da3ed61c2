package k8s_test

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kustomizations are what the test renders: the base as it is, and the
// example overlay, which must yield a complete deployment.
var kustomizations = []struct {
	dir      string
	complete bool // every non-optional secret it names is rendered
}{
	{dir: "base"},
	{dir: "overlays/example", complete: true},
}

// notSet are the variables a component reads that the manifests leave
// unset on purpose, and why. A variable a component reads must be set in
// its container or listed here; one listed here must be read and not set.
var notSet = []struct {
	why        string
	components []string // nil: every one that reads them
	vars       []string
}{
	{
		why:  "operators reach Zimmer through the gateway; no client calls a service's gRPC (NetworkPolicy zimmer-internal-grpc)",
		vars: []string{"ZIMMER_API_KEYS", "ZIMMER_ADMIN_API_KEYS"}, components: []string{"lifecycle", "lineage", "queue", "runner", "notification"},
	},
	{
		why: "pprof stays off; set it to a loopback address and kubectl port-forward to profile a pod",
		vars: []string{"LIFECYCLE_DEBUG_ADDR", "LINEAGE_DEBUG_ADDR", "QUEUE_DEBUG_ADDR", "RUNNER_DEBUG_ADDR",
			"NOTIFICATION_DEBUG_ADDR", "GATEWAY_DEBUG_ADDR"},
	},
	{
		why:  "test builds only (the testboundary tag); never in a deployment",
		vars: []string{"GATEWAY_TEST_BOUNDARY_TOKEN"},
	},
	{
		why:  "the GitHub App needs its key mounted as a file; GITHUB_TOKEN is the manifests' way (docs/github.md)",
		vars: []string{"GITHUB_APP_ID", "GITHUB_APP_INSTALLATION_ID", "GITHUB_APP_PRIVATE_KEY_FILE"},
	},
	{
		why:  "GitHub.com; a GitHub Enterprise overlay sets it",
		vars: []string{"GITHUB_API_URL"},
	},
	{
		why:  "Slack's API; only a test points it elsewhere",
		vars: []string{"SLACK_API_URL"},
	},
	{
		why:  "unlimited until an admin sets a limit at run time (PATCH /api/v1/admin/turn_slots)",
		vars: []string{"LIFECYCLE_TURN_SLOTS"},
	},
	{
		why:  "inside RUNNER_WORKSPACES_DIR by default, on the node's volume, which is where it must be",
		vars: []string{"RUNNER_PRESERVATION_DIR"},
	},
	{
		why:  "the demo agent is on the runner image's PATH; claude and codex are on an image built from it (docs/kubernetes.md › Images)",
		vars: []string{"RUNNER_DEMO_AGENT_PATH", "RUNNER_CLAUDE_PATH", "RUNNER_CODEX_PATH"},
	},
	{
		why: "the runtimes' choices, the operator's to make in an overlay: each CLI's own default model, no command runtime, " +
			"ambient logins rather than an accounts file",
		vars: []string{"RUNNER_CLAUDE_MODEL", "RUNNER_CODEX_MODEL", "RUNNER_COMMAND_TEMPLATE", "RUNNER_ACCOUNTS_FILE",
			"RUNNER_CLAUDE_SKIP_PERMISSIONS", "RUNNER_CODEX_BYPASS_SANDBOX", "RUNNER_INFERENCE", "RUNNER_STATUS_SUMMARIES"},
	},
	{
		why:  "a node's own turn limit is the operator's to size to its machine; unset, the fleet's limit alone applies",
		vars: []string{"RUNNER_TURN_SLOTS"},
	},
	{
		why: "timings and retentions whose defaults hold on a cluster as on one machine (each documented beside its " +
			"service's config)",
		vars: []string{
			"LIFECYCLE_RELAY_POLL_INTERVAL", "LIFECYCLE_TRASH_RETENTION", "LIFECYCLE_ALERT_AFTER_ATTEMPTS",
			"LIFECYCLE_DEAD_AFTER_ATTEMPTS", "LIFECYCLE_OUTBOX_RETENTION", "LIFECYCLE_RUNNER_TIMEOUT", "LIFECYCLE_QUEUE_TIMEOUT",
			"LIFECYCLE_DELIVERY_RETENTION", "LIFECYCLE_STALE_SWEEP_INTERVAL", "LIFECYCLE_STALE_AFTER",
			"LIFECYCLE_ELICITATION_SWEEP_INTERVAL", "LIFECYCLE_ELICITATION_EXPIRY", "LIFECYCLE_HEARTBEAT_SWEEP_INTERVAL",
			"LIFECYCLE_SPOT_SWEEP_INTERVAL", "GITHUB_POLL_INTERVAL", "GITHUB_TIMEOUT",
			"LINEAGE_OUTBOX_RETENTION", "QUEUE_DRAIN_DELAY",
			"NOTIFICATION_ALERT_DEDUP_WINDOW", "NOTIFICATION_NEEDS_INPUT_DEBOUNCE", "NOTIFICATION_SINK_TIMEOUT",
			"RUNNER_SIGTERM_GRACE", "RUNNER_SIGKILL_GRACE", "RUNNER_SWEEP_GRACE", "RUNNER_NODE_DEAD_AFTER",
			"RUNNER_ORPHAN_SWEEP_INTERVAL", "RUNNER_ORPHAN_GRACE", "RUNNER_ZOMBIE_REAP_INTERVAL", "RUNNER_TRANSCRIPT_RETENTION",
			"RUNNER_CLONE_UNDO_WINDOW", "RUNNER_TRASH_REAP_INTERVAL", "RUNNER_TRASH_RETENTION",
			"GATEWAY_MCP_SESSION_TTL", "GATEWAY_MCP_MAX_SESSIONS",
		},
	},
}

// notSetFor is the notSet list as component → variable → why.
func notSetFor(t *testing.T, reads map[string]map[string]envVar) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, e := range notSet {
		for _, v := range e.vars {
			listed := false
			for name, vars := range reads {
				if e.components != nil && !slices.Contains(e.components, name) {
					continue
				}
				if _, ok := vars[v]; !ok {
					continue
				}
				if out[name] == nil {
					out[name] = map[string]string{}
				}
				out[name][v] = e.why
				listed = true
			}
			require.True(t, listed, "notSet lists %s, which no component reads: remove it", v)
		}
	}
	return out
}

// TestManifests renders each kustomization, decodes every object strictly
// and checks it against what the components read and need.
func TestManifests(t *testing.T) {
	t.Parallel()
	reads, err := readEnv()
	require.NoError(t, err, "find the variables the components read")
	for _, k := range kustomizations {
		t.Run(strings.ReplaceAll(k.dir, "/", "_"), func(t *testing.T) {
			t.Parallel()
			r := render(t, k.dir)
			checkWorkloads(t, r, reads, k.complete)
			checkNetworkPolicies(t, r)
			checkIngress(t, r)
		})
	}
}

func checkWorkloads(t *testing.T, r rendered, reads map[string]map[string]envVar, complete bool) {
	t.Helper()
	unset := notSetFor(t, reads)
	seen := map[string]bool{}
	for _, w := range r.workloads() {
		spec := w.template.Spec
		require.Len(t, spec.Containers, 1, "%s %s: one container, the component", w.kind, w.name)
		c := spec.Containers[0]
		name := c.Name
		id := fmt.Sprintf("%s %s, container %s", w.kind, w.name, name)
		vars, ok := reads[name]
		require.True(t, ok, "%s: the container is named after the binary it runs, one of %v", id, slices.Sorted(maps.Keys(binaries)))
		require.False(t, seen[name], "%s: a second workload runs %s", id, name)
		seen[name] = true
		wantKind := "Deployment"
		if name == "runner" {
			wantKind = "StatefulSet"
		}
		require.Equal(t, wantKind, w.kind, "%s: kind", id)
		require.GreaterOrEqual(t, w.replicas, int32(2), "%s: replicated (issue 30: every service tolerates a twin)", id)

		set := checkEnv(t, r, id, c, complete)
		for v := range set {
			_, read := vars[v]
			if _, otel := vars[otelVar]; otel && strings.HasPrefix(v, "OTEL_") {
				read = true
			}
			require.True(t, read, "%s sets %s, which %s does not read (no envcfg tag names it)", id, v, name)
			_, listed := unset[name][v]
			require.False(t, listed, "%s sets %s, which notSet says is left unset: drop one", id, v)
		}
		for v, ev := range vars {
			if _, ok := set[v]; ok || v == otelVar { // tracing is off unless an overlay sets them
				continue
			}
			_, listed := unset[name][v]
			require.True(t, listed, "%s reads %s (%s; a default in its tag: %v) but %s leaves it unset: set it, or add it to notSet "+
				"saying why leaving it unset is right on a cluster", name, v, ev.where, ev.defaulted, id)
		}

		// The platform: pod hygiene, probes, resources, ports.
		require.Equal(t, new(false), spec.EnableServiceLinks, "%s: no Docker-link variables (LIFECYCLE_PORT=…) in the component's environment", id)
		require.NotNil(t, spec.SecurityContext, id)
		require.Equal(t, new(true), spec.SecurityContext.RunAsNonRoot, "%s: runs as non-root", id)
		require.Equal(t, new(int64(65532)), spec.SecurityContext.RunAsUser, "%s: as the images' user (deploy/images)", id)
		require.NotNil(t, c.SecurityContext, id)
		require.Equal(t, new(false), c.SecurityContext.AllowPrivilegeEscalation, id)
		require.Equal(t, new(true), c.SecurityContext.ReadOnlyRootFilesystem, id)
		require.False(t, c.Resources.Requests.Cpu().IsZero(), "%s: a CPU request", id)
		require.False(t, c.Resources.Requests.Memory().IsZero(), "%s: a memory request", id)
		checkProbes(t, id, name, c)
		checkMetrics(t, id, name, w.template, c, set)
		checkPDB(t, r, id, w)
		if name != "gateway" {
			db, ok := set[strings.ToUpper(name)+"_DATABASE_URL"]
			require.True(t, ok && db.ValueFrom != nil && db.ValueFrom.SecretKeyRef != nil && !deref(db.ValueFrom.SecretKeyRef.Optional),
				"%s: the database URL comes from a Secret, required", id)
		}
		if name == "runner" {
			checkRunnerNode(t, id, w, c, set)
		}
		checkAddresses(t, r, id, set)
	}
	require.Len(t, seen, len(binaries), "every binary runs: %v", seen)
}

// checkEnv returns the container's variables by name, each resolved: a
// ConfigMap or Secret key it names exists (unless optional; a Secret only
// when the kustomization is complete, the base leaving them to overlays).
func checkEnv(t *testing.T, r rendered, id string, c corev1.Container, complete bool) map[string]corev1.EnvVar {
	t.Helper()
	require.Empty(t, c.EnvFrom, "%s: every variable by name (envFrom hides them from this test and from a reader)", id)
	set := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		_, dup := set[e.Name]
		require.False(t, dup, "%s sets %s twice", id, e.Name)
		set[e.Name] = e
		if e.ValueFrom == nil {
			continue
		}
		switch from := e.ValueFrom; {
		case from.ConfigMapKeyRef != nil:
			ref := from.ConfigMapKeyRef
			cm, ok := r.configMaps[ref.Name]
			require.True(t, ok, "%s: %s names ConfigMap %s, which is not rendered", id, e.Name, ref.Name)
			_, has := cm.Data[ref.Key]
			require.True(t, has || deref(ref.Optional), "%s: %s names key %s, which ConfigMap %s lacks", id, e.Name, ref.Key, ref.Name)
		case from.SecretKeyRef != nil:
			ref := from.SecretKeyRef
			if deref(ref.Optional) || !complete {
				continue
			}
			s, ok := r.secrets[ref.Name]
			require.True(t, ok, "%s: %s names Secret %s, which is not rendered", id, e.Name, ref.Name)
			_, has := s.Data[ref.Key]
			if !has {
				_, has = s.StringData[ref.Key]
			}
			require.True(t, has, "%s: %s names key %s, which Secret %s lacks", id, e.Name, ref.Key, ref.Name)
		case from.FieldRef != nil:
		default:
			t.Fatalf("%s: %s comes from a source this test does not resolve", id, e.Name)
		}
	}
	return set
}

// checkProbes: the services answer liveness and readiness on their gRPC
// health (liveness on grpcserver.LivenessService, which a database outage
// leaves SERVING); the gateway on HTTP, readiness on /readyz.
func checkProbes(t *testing.T, id, name string, c corev1.Container) {
	t.Helper()
	for what, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		require.NotNil(t, p, "%s: a %s probe", id, what)
		if name == "gateway" {
			require.NotNil(t, p.HTTPGet, "%s: the gateway's %s probe is HTTP", id, what)
			require.Equal(t, containerPort(t, id, c, p.HTTPGet.Port), int32(8080), id)
			want := "/openapi.json"
			if what == "readiness" {
				want = "/readyz"
			}
			require.Equal(t, want, p.HTTPGet.Path, "%s: %s probe path", id, what)
			continue
		}
		require.NotNil(t, p.GRPC, "%s: the %s probe asks the gRPC health service", id, what)
		require.Equal(t, grpcPort(t, id, c), p.GRPC.Port, "%s: the %s probe asks the gRPC port", id, what)
		want := "zimmer.liveness"
		if what == "readiness" {
			want = ""
		}
		require.Equal(t, want, deref(p.GRPC.Service), "%s: the %s probe's health service", id, what)
	}
}

func grpcPort(t *testing.T, id string, c corev1.Container) int32 {
	t.Helper()
	return containerPort(t, id, c, intstr.FromString("grpc"))
}

// containerPort resolves a port by number or name to a declared one.
func containerPort(t *testing.T, id string, c corev1.Container, port intstr.IntOrString) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return p.ContainerPort
		}
	}
	t.Fatalf("%s declares no port %s", id, port.String())
	return 0
}

// checkMetrics: <COMPONENT>_METRICS_ADDR listens on the port named
// metrics, which the pod's Prometheus annotations name.
func checkMetrics(t *testing.T, id, name string, tmpl corev1.PodTemplateSpec, c corev1.Container, set map[string]corev1.EnvVar) {
	t.Helper()
	addr, ok := set[strings.ToUpper(name)+"_METRICS_ADDR"]
	require.True(t, ok && addr.Value != "", "%s: metrics on", id)
	_, port, err := net.SplitHostPort(addr.Value)
	require.NoError(t, err, id)
	want := containerPort(t, id, c, intstr.FromString("metrics"))
	require.Equal(t, strconv.Itoa(int(want)), port, "%s: the metrics port", id)
	require.Equal(t, "true", tmpl.Annotations["prometheus.io/scrape"], id)
	require.Equal(t, port, tmpl.Annotations["prometheus.io/port"], id)
	require.Equal(t, "/metrics", tmpl.Annotations["prometheus.io/path"], id)
	if name != "gateway" {
		grpcAddr := set[strings.ToUpper(name)+"_GRPC_ADDR"]
		_, gp, err := net.SplitHostPort(grpcAddr.Value)
		require.NoError(t, err, "%s: %s_GRPC_ADDR", id, strings.ToUpper(name))
		require.Equal(t, strconv.Itoa(int(grpcPort(t, id, c))), gp, "%s: gRPC listens on the port named grpc", id)
	}
}

// checkPDB: exactly one PodDisruptionBudget covers the pods and leaves
// some of them up.
func checkPDB(t *testing.T, r rendered, id string, w workload) {
	t.Helper()
	var found int
	for _, p := range r.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		require.NoError(t, err)
		if !sel.Matches(labels.Set(w.template.Labels)) {
			continue
		}
		found++
		if p.Spec.MinAvailable != nil {
			require.GreaterOrEqual(t, p.Spec.MinAvailable.IntValue(), 1, "%s: PDB %s", id, p.Name)
			require.Less(t, p.Spec.MinAvailable.IntValue(), int(w.replicas), "%s: PDB %s lets one pod go", id, p.Name)
		} else {
			require.Equal(t, 1, p.Spec.MaxUnavailable.IntValue(), "%s: PDB %s", id, p.Name)
		}
	}
	require.Equal(t, 1, found, "%s: one PodDisruptionBudget", id)
}

// checkRunnerNode: the node's name is its pod's (stable in a StatefulSet)
// and its workspaces are on a volume from the StatefulSet's claims.
func checkRunnerNode(t *testing.T, id string, w workload, c corev1.Container, set map[string]corev1.EnvVar) {
	t.Helper()
	node := set["RUNNER_NODE"]
	require.True(t, node.ValueFrom != nil && node.ValueFrom.FieldRef != nil && node.ValueFrom.FieldRef.FieldPath == "metadata.name",
		"%s: RUNNER_NODE is the pod's name (the downward API)", id)
	dir := set["RUNNER_WORKSPACES_DIR"].Value
	require.True(t, path.IsAbs(dir), "%s: RUNNER_WORKSPACES_DIR %q", id, dir)
	var onClaim bool
	for _, m := range c.VolumeMounts {
		if m.SubPath != "" || (dir != m.MountPath && !strings.HasPrefix(dir, strings.TrimSuffix(m.MountPath, "/")+"/")) {
			continue
		}
		onClaim = slices.ContainsFunc(w.claims, func(pvc corev1.PersistentVolumeClaim) bool { return pvc.Name == m.Name })
	}
	require.True(t, onClaim, "%s: RUNNER_WORKSPACES_DIR %s is on a persistent volume from volumeClaimTemplates", id, dir)
}

// checkAddresses: every address a component dials names a rendered
// Service and one of its ports.
func checkAddresses(t *testing.T, r rendered, id string, set map[string]corev1.EnvVar) {
	t.Helper()
	for name, e := range set {
		var addrs []string
		switch {
		case e.Value == "":
			continue
		case strings.HasSuffix(name, "_CONSUMERS"):
			for pair := range strings.SplitSeq(e.Value, ",") {
				_, addr, ok := strings.Cut(pair, "=")
				require.True(t, ok, "%s: %s: %q is not subscriber=host:port", id, name, pair)
				addrs = append(addrs, addr)
			}
		case strings.HasSuffix(name, "_ADDR") && !strings.HasSuffix(name, "_GRPC_ADDR") &&
			!strings.HasSuffix(name, "_METRICS_ADDR") && !strings.HasSuffix(name, "_HTTP_ADDR"):
			addrs = []string{e.Value}
		case strings.HasSuffix(name, "_URL") && strings.Contains(e.Value, "://"):
			u, err := url.Parse(e.Value)
			require.NoError(t, err, "%s: %s", id, name)
			if strings.Contains(u.Host, ".") { // outside the namespace
				continue
			}
			addrs = []string{u.Host}
		default:
			continue
		}
		for _, addr := range addrs {
			// A gRPC peer is dialled dns:/// over a headless Service, so
			// the caller sees every replica and spreads its calls (PL-25);
			// through a ClusterIP one connection would pin one pod.
			target, spread := strings.CutPrefix(addr, "dns:///")
			host, port, err := net.SplitHostPort(target)
			require.NoError(t, err, "%s: %s: %q", id, name, addr)
			i := slices.IndexFunc(r.services, func(s *corev1.Service) bool {
				return s.Name == host && slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == port })
			})
			require.GreaterOrEqual(t, i, 0, "%s: %s dials %s, which no Service of the kustomization serves", id, name, addr)
			if strings.HasSuffix(name, "_URL") {
				continue // HTTP, through the Service's own balancing
			}
			require.True(t, spread, "%s: %s dials %s: a replicated peer is dialled dns:///%s, so calls spread over its pods", id, name, addr, target)
			require.Equal(t, corev1.ClusterIPNone, r.services[i].Spec.ClusterIP,
				"%s: %s dials %s through Service %s, which must be headless for DNS to name every pod", id, name, addr, host)
		}
	}
}

// checkNetworkPolicies: every Zimmer pod is under a default deny, and each
// port the others open is opened only to the peers that need it.
func checkNetworkPolicies(t *testing.T, r rendered) {
	t.Helper()
	for _, w := range r.workloads() {
		pod := labels.Set(w.template.Labels)
		name := w.template.Spec.Containers[0].Name
		var denied bool
		allowed := map[string][]networkingv1.NetworkPolicyPeer{} // port name → peers
		for _, p := range r.networkPolicies {
			sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
			require.NoError(t, err)
			if !sel.Matches(pod) {
				continue
			}
			require.Contains(t, p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress, p.Name)
			if len(p.Spec.Ingress) == 0 {
				denied = true
			}
			for _, rule := range p.Spec.Ingress {
				require.NotEmpty(t, rule.From, "NetworkPolicy %s: a rule open to every source", p.Name)
				require.NotEmpty(t, rule.Ports, "NetworkPolicy %s: a rule open on every port", p.Name)
				for _, port := range rule.Ports {
					require.NotNil(t, port.Port, "NetworkPolicy %s: a port by name", p.Name)
					allowed[port.Port.String()] = append(allowed[port.Port.String()], rule.From...)
				}
			}
		}
		require.True(t, denied, "%s: under a default-deny NetworkPolicy", name)
		for _, port := range w.template.Spec.Containers[0].Ports {
			peers := allowed[port.Name]
			require.NotEmpty(t, peers, "%s: port %s is reachable by someone", name, port.Name)
			for _, peer := range peers {
				switch port.Name {
				case "grpc":
					require.Nil(t, peer.NamespaceSelector, "%s: gRPC only from this namespace", name)
					require.Equal(t, map[string]string{"app.kubernetes.io/part-of": "zimmer"}, peer.PodSelector.MatchLabels,
						"%s: gRPC only from Zimmer's components", name)
				case "http":
					require.Equal(t, "gateway", name)
					if peer.NamespaceSelector == nil {
						require.Equal(t, map[string]string{"app.kubernetes.io/name": "runner"}, peer.PodSelector.MatchLabels,
							"the gateway: in the namespace, only the runner nodes' agents")
					}
				case "metrics":
					require.NotNil(t, peer.NamespaceSelector, "%s: metrics from the monitoring namespace", name)
				default:
					t.Fatalf("%s: port %s, which this test has no rule for", name, port.Name)
				}
			}
		}
	}
}

// checkIngress: the Ingress sends everything to the gateway's Service.
func checkIngress(t *testing.T, r rendered) {
	t.Helper()
	require.Len(t, r.ingresses, 1)
	ing := r.ingresses[0]
	require.NotEmpty(t, ing.Spec.Rules)
	for _, rule := range ing.Spec.Rules {
		require.NotNil(t, rule.HTTP, ing.Name)
		for _, p := range rule.HTTP.Paths {
			require.Equal(t, "gateway", p.Backend.Service.Name)
			require.Equal(t, "http", p.Backend.Service.Port.Name)
		}
	}
	require.True(t, slices.ContainsFunc(r.services, func(s *corev1.Service) bool {
		return s.Name == "gateway" && s.Spec.Ports[0].Name == "http"
	}), "the gateway's Service")
}
