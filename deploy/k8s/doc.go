// Package k8s holds Zimmer's Kubernetes manifests (kustomize: base/ and
// overlays/) and the test that renders them and checks them against the
// environment variables the services read. It has no code of its own: the
// module exists so that the Kubernetes libraries stay out of the services'
// modules.
package k8s
