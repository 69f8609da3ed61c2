package k8s_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// rendered is a kustomization's output, every object decoded into its
// Kubernetes type.
type rendered struct {
	deployments     []*appsv1.Deployment
	statefulSets    []*appsv1.StatefulSet
	services        []*corev1.Service
	configMaps      map[string]*corev1.ConfigMap
	secrets         map[string]*corev1.Secret
	pdbs            []*policyv1.PodDisruptionBudget
	networkPolicies []*networkingv1.NetworkPolicy
	ingresses       []*networkingv1.Ingress
	namespaces      []*corev1.Namespace
}

// render builds the kustomization in dir with the kustomize API (what
// `kubectl kustomize` runs) and decodes every object strictly: a field its
// type does not have, or a field given twice, fails, where kubectl apply
// would drop it or the API server refuse it.
func render(t *testing.T, dir string) rendered {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "render %s", dir)
	out := rendered{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, r := range m.Resources() {
		doc, err := r.AsYAML()
		require.NoError(t, err)
		gvk := r.GetGvk()
		id := fmt.Sprintf("%s %s/%s", dir, gvk.Kind, r.GetName())
		decode := func(into any, apiVersion string) {
			t.Helper()
			require.Equal(t, apiVersion, gvk.ApiVersion(), "%s: apiVersion", id)
			require.NoError(t, yaml.UnmarshalStrict(doc, into), "%s does not decode strictly into its type", id)
		}
		switch gvk.Kind {
		case "Deployment":
			var o appsv1.Deployment
			decode(&o, "apps/v1")
			out.deployments = append(out.deployments, &o)
		case "StatefulSet":
			var o appsv1.StatefulSet
			decode(&o, "apps/v1")
			out.statefulSets = append(out.statefulSets, &o)
		case "Service":
			var o corev1.Service
			decode(&o, "v1")
			out.services = append(out.services, &o)
		case "ConfigMap":
			var o corev1.ConfigMap
			decode(&o, "v1")
			out.configMaps[o.Name] = &o
		case "Secret":
			var o corev1.Secret
			decode(&o, "v1")
			out.secrets[o.Name] = &o
		case "PodDisruptionBudget":
			var o policyv1.PodDisruptionBudget
			decode(&o, "policy/v1")
			out.pdbs = append(out.pdbs, &o)
		case "NetworkPolicy":
			var o networkingv1.NetworkPolicy
			decode(&o, "networking.k8s.io/v1")
			out.networkPolicies = append(out.networkPolicies, &o)
		case "Ingress":
			var o networkingv1.Ingress
			decode(&o, "networking.k8s.io/v1")
			out.ingresses = append(out.ingresses, &o)
		case "Namespace":
			var o corev1.Namespace
			decode(&o, "v1")
			out.namespaces = append(out.namespaces, &o)
		default:
			t.Fatalf("%s: a kind this test does not decode; add it to render", id)
		}
	}
	return out
}

// workload is one component's pod template, from a Deployment or a
// StatefulSet.
type workload struct {
	kind, name string
	replicas   int32
	template   corev1.PodTemplateSpec
	claims     []corev1.PersistentVolumeClaim
}

func (r rendered) workloads() []workload {
	var out []workload
	for _, d := range r.deployments {
		out = append(out, workload{kind: "Deployment", name: d.Name, replicas: deref(d.Spec.Replicas), template: d.Spec.Template})
	}
	for _, s := range r.statefulSets {
		out = append(out, workload{kind: "StatefulSet", name: s.Name, replicas: deref(s.Spec.Replicas),
			template: s.Spec.Template, claims: s.Spec.VolumeClaimTemplates})
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
