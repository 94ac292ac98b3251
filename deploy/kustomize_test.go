package deploy

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestKustomizeBuildsEveryManifest: `kubectl kustomize` (offline; no
// cluster) builds the directory into the five objects, the image set.
func TestKustomizeBuildsEveryManifest(t *testing.T) {
	kubectl := tool(t, "kubectl", "the project's machines ship it; elsewhere install kubectl (only `kubectl kustomize` is used, no cluster)")
	out := run(t, ".", kubectl, "kustomize", kubeDir)
	var got []string
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var o struct {
			metav1.TypeMeta
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("kubectl kustomize printed something not YAML: %v\n%s", err, doc)
		}
		got = append(got, o.Kind+"/"+o.Metadata.Name)
		if o.Kind == "StatefulSet" {
			var sts appsv1.StatefulSet
			if err := yaml.UnmarshalStrict([]byte(doc), &sts); err != nil || !strings.Contains(sts.Spec.Template.Spec.Containers[0].Image, ":") {
				t.Errorf("the built StatefulSet (%v) has image %q, want the kustomization's name:tag", err, sts.Spec.Template.Spec.Containers[0].Image)
			}
		}
	}
	want := []string{"ConfigMap/connector-job", "PodMonitor/connector", "Secret/connector-kafka", "Service/connector", "StatefulSet/connector"}
	if slices.Sort(got); !slices.Equal(got, want) {
		t.Errorf("kubectl kustomize built %v, want %v", got, want)
	}
}
