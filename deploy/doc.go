// Package deploy holds no code: it is the deployment files of the
// connector (kubernetes/: manifests and their kustomization; grafana/: a
// dashboard; prometheus/: alert rules) and the tests that check them
// offline. The tests here check the files against Kubernetes' API types,
// the project's config loader and promtool; that every metric the
// dashboard and the rules query is one the binary exports is checked in
// cmd/connector (deploy_dashboard_test.go), which runs a job and scrapes it.
package deploy
