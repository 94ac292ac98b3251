package deploy

import (
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// groupDir is the overlay that runs the job over several pods.
const groupDir = "kubernetes-group"

// TestTheGroupOverlayRunsReplicasOnOneSharedVolume: `kubectl kustomize`
// builds deploy/kubernetes-group into the base's objects with 3 replicas
// in group mode, every pod's /data on one ReadWriteMany claim (a slot's
// checkpoints, state and lock must be where every pod sees them), and the
// ConfigMap's job valid in group mode with its directories there.
func TestTheGroupOverlayRunsReplicasOnOneSharedVolume(t *testing.T) {
	kubectl := tool(t, "kubectl", "the project's machines ship it; elsewhere install kubectl (only `kubectl kustomize` is used, no cluster)")
	out := run(t, ".", kubectl, "kustomize", groupDir)
	m := &manifests{}
	var pvc corev1.PersistentVolumeClaim
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("kubectl kustomize printed something not YAML: %v\n%s", err, doc)
		}
		targets := map[string]any{"StatefulSet": &m.sts, "ConfigMap": &m.cm, "Secret": &m.secret, "PersistentVolumeClaim": &pvc}
		if obj, ok := targets[tm.Kind]; ok {
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("the built %s does not decode strictly: %v", tm.Kind, err)
			}
		}
	}
	sts := m.sts.Spec
	if sts.Replicas == nil || *sts.Replicas != 3 || sts.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("replicas %v, pod management %q: want 3, Parallel", sts.Replicas, sts.PodManagementPolicy)
	}
	if len(sts.VolumeClaimTemplates) != 0 {
		t.Errorf("the pods still get a claim each (%d templates): they must share one", len(sts.VolumeClaimTemplates))
	}
	shared := false
	for _, v := range sts.Template.Spec.Volumes {
		if v.Name == "data" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name {
			shared = true
		}
	}
	if !shared || pvc.Name == "" || len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany {
		t.Errorf("volume data is not the ReadWriteMany claim %q (access %v) of the overlay", pvc.Name, pvc.Spec.AccessModes)
	}
	job := m.loadJob(t, readDockerfile(t))
	if !job.Instances.Group() {
		t.Errorf("the job runs in %s mode, want group", job.Instances.Mode)
	}
	for key, dir := range map[string]string{"checkpoint.dir": job.Checkpoint.Dir, "state.dir": job.State.Dir} {
		if !strings.HasPrefix(filepath.Clean(dir)+"/", "/data/") {
			t.Errorf("%s %s is not on the shared volume (/data)", key, dir)
		}
	}
	if n := job.Instances.Slots; n < int(*sts.Replicas) {
		t.Errorf("instances.slots %d is less than the %d replicas: some would get no work", n, *sts.Replicas)
	}
}
