package deploy

import (
	"encoding/json"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/connector-dev/connector/config"
	_ "github.com/connector-dev/connector/internal/builtin" // the sink kinds the job names
	"github.com/connector-dev/connector/sink/file"
)

const kubeDir = "kubernetes"

// kustomization is the part of kustomize's Kustomization the directory
// uses; kubectl kustomize (TestKustomizeBuildsEveryManifest) checks the
// rest.
type kustomization struct {
	metav1.TypeMeta `json:",inline"`
	Namespace       string   `json:"namespace,omitempty"`
	Resources       []string `json:"resources"`
	Images          []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
}

// podMonitor is the part of the Prometheus Operator's PodMonitor
// (monitoring.coreos.com/v1) that podmonitor.yaml uses: its Go types are
// a large module, so strict decoding refuses a misspelt or misplaced key
// among these, not every key the CRD would refuse.
type podMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel            string               `json:"jobLabel"`
		Selector            metav1.LabelSelector `json:"selector"`
		PodMetricsEndpoints []struct {
			Port        string `json:"port"`
			Path        string `json:"path"`
			Interval    string `json:"interval"`
			Relabelings []struct {
				SourceLabels []string `json:"sourceLabels"`
				TargetLabel  string   `json:"targetLabel"`
			} `json:"relabelings"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// manifests are the objects of the kustomization, each decoded strictly
// (an unknown or misplaced key is an error) into its API type.
type manifests struct {
	sts    appsv1.StatefulSet
	cm     corev1.ConfigMap
	secret corev1.Secret
	svc    corev1.Service
	pm     podMonitor
}

// loadManifests decodes every resource kustomization.yaml lists, and fails
// unless it lists exactly the YAML files of the directory, one object of
// each kind a file.
func loadManifests(t *testing.T) *manifests {
	t.Helper()
	var k kustomization
	decodeStrict(t, filepath.Join(kubeDir, "kustomization.yaml"), &k)
	files, err := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" {
			want = append(want, base)
		}
	}
	if got := slices.Sorted(slices.Values(k.Resources)); !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml lists %v; the directory holds %v", got, want)
	}
	m := &manifests{}
	targets := map[string]struct {
		apiVersion string
		obj        any
	}{
		"StatefulSet": {"apps/v1", &m.sts},
		"ConfigMap":   {"v1", &m.cm},
		"Secret":      {"v1", &m.secret},
		"Service":     {"v1", &m.svc},
		"PodMonitor":  {"monitoring.coreos.com/v1", &m.pm},
	}
	seen := map[string]string{}
	for _, name := range k.Resources {
		path := filepath.Join(kubeDir, name)
		var tm metav1.TypeMeta
		decode(t, path, &tm)
		target, ok := targets[tm.Kind]
		switch {
		case !ok:
			t.Fatalf("%s: kind %q: the test knows %v", path, tm.Kind, slices.Sorted(maps.Keys(targets)))
		case seen[tm.Kind] != "":
			t.Fatalf("%s: a second %s (the first is in %s)", path, tm.Kind, seen[tm.Kind])
		case tm.APIVersion != target.apiVersion:
			t.Errorf("%s: apiVersion %q, want %q", path, tm.APIVersion, target.apiVersion)
		}
		seen[tm.Kind] = path
		decodeStrict(t, path, target.obj)
	}
	for kind := range targets {
		if seen[kind] == "" {
			t.Errorf("no %s among the resources", kind)
		}
	}
	return m
}

func decode(t *testing.T, path string, v any) {
	t.Helper()
	if err := yaml.Unmarshal(readFile(t, path), v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func decodeStrict(t *testing.T, path string, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(readFile(t, path), v); err != nil {
		t.Fatalf("%s does not decode strictly into %T: %v", path, v, err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// image is what the Dockerfile says about the container the pod runs.
type image struct {
	uid, gid string
	env      map[string]string // ENV lines
	cmd      []string
}

func readDockerfile(t *testing.T) image {
	t.Helper()
	d := string(readFile(t, "../Dockerfile"))
	img := image{env: map[string]string{}}
	if m := regexp.MustCompile(`(?m)^USER (\d+):(\d+)$`).FindStringSubmatch(d); m != nil {
		img.uid, img.gid = m[1], m[2]
	}
	for _, m := range regexp.MustCompile(`(?m)^ENV (\w+)=(\S+)$`).FindAllStringSubmatch(d, -1) {
		img.env[m[1]] = m[2]
	}
	if m := regexp.MustCompile(`(?m)^CMD (\[.*\])$`).FindStringSubmatch(d); m != nil {
		if err := json.Unmarshal([]byte(m[1]), &img.cmd); err != nil {
			t.Fatalf("Dockerfile CMD: %v", err)
		}
	}
	if img.uid == "" || img.cmd == nil {
		t.Fatalf("the Dockerfile has no USER uid:gid or no CMD [...]: %+v", img)
	}
	return img
}

// container is the StatefulSet's only container.
func (m *manifests) container(t *testing.T) *corev1.Container {
	t.Helper()
	if c := m.sts.Spec.Template.Spec.Containers; len(c) == 1 {
		return &c[0]
	}
	t.Fatalf("the StatefulSet has %d containers, want 1", len(m.sts.Spec.Template.Spec.Containers))
	return nil
}

// port returns the container port a probe or a monitor names.
func port(c *corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// loadJob loads the ConfigMap's job with the project's loader, its ${VAR}
// resolved from the env the pod has: the container's env (the Secret's
// keys for secretKeyRef) over the image's ENV.
func (m *manifests) loadJob(t *testing.T, img image) *config.Job {
	t.Helper()
	env := map[string]string{}
	for k, v := range img.env {
		env[k] = v
	}
	for _, e := range m.container(t).Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			v, ok := m.secret.StringData[ref.Key]
			if ref.Name != m.secret.Name || !ok {
				t.Errorf("env %s: secret %s key %s: secret.yaml is %s with keys %v", e.Name, ref.Name, ref.Key, m.secret.Name, slices.Sorted(maps.Keys(m.secret.StringData)))
			}
			env[e.Name] = v
		}
	}
	data, ok := m.cm.Data["config.yaml"]
	if !ok {
		t.Fatalf("the ConfigMap has no config.yaml (keys %v)", slices.Sorted(maps.Keys(m.cm.Data)))
	}
	job, err := config.Parse("configmap.yaml:config.yaml", []byte(data), func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
	if err != nil {
		t.Fatalf("the ConfigMap's job does not load with the pod's env %v:\n%v", slices.Sorted(maps.Keys(env)), err)
	}
	return job
}

// TestStatefulSetRunsTheJobAsTheImageExpects: one replica, the image's
// user and CMD, the ConfigMap's job at the path the image reads, /data on
// the claim template, resources set.
func TestStatefulSetRunsTheJobAsTheImageExpects(t *testing.T) {
	m, img := loadManifests(t), readDockerfile(t)
	spec := &m.sts.Spec
	if spec.Replicas == nil || *spec.Replicas != 1 {
		t.Errorf("replicas %v, want 1 (one process per job)", spec.Replicas)
	}
	if !contains(spec.Template.Labels, spec.Selector.MatchLabels) || len(spec.Selector.MatchExpressions) > 0 {
		t.Errorf("the selector %v does not select the pod template's labels %v", spec.Selector, spec.Template.Labels)
	}
	sc := spec.Template.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || fmtInt(sc.RunAsUser) != img.uid || fmtInt(sc.RunAsGroup) != img.gid || fmtInt(sc.FSGroup) != img.gid {
		t.Errorf("pod securityContext: want runAsNonRoot, runAsUser %s, runAsGroup and fsGroup %s (the Dockerfile's USER)", img.uid, img.gid)
	}
	c := m.container(t)
	if args := append(slices.Clone(c.Command), c.Args...); len(c.Command) > 0 || !slices.Equal(args, img.cmd) {
		t.Errorf("container command %v args %v, want the image's entrypoint with args %v (the Dockerfile's CMD)", c.Command, c.Args, img.cmd)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = vm
	}
	// The job file the CMD names comes from the ConfigMap.
	jobPath := img.cmd[slices.Index(img.cmd, "--config")+1]
	cmVol := volume(spec.Template.Spec.Volumes, mounts[filepath.Dir(jobPath)].Name)
	if cmVol == nil || cmVol.ConfigMap == nil || cmVol.ConfigMap.Name != m.cm.Name || !slices.ContainsFunc(cmVol.ConfigMap.Items, func(k corev1.KeyToPath) bool {
		return k.Key == "config.yaml" && k.Path == filepath.Base(jobPath)
	}) {
		t.Errorf("%s is not the ConfigMap %s's config.yaml: mount %+v, volume %+v", jobPath, m.cm.Name, mounts[filepath.Dir(jobPath)], cmVol)
	}
	data := mounts["/data"]
	if !slices.ContainsFunc(spec.VolumeClaimTemplates, func(p corev1.PersistentVolumeClaim) bool {
		return p.Name == data.Name && p.Spec.Resources.Requests.Storage().Sign() > 0 && slices.Contains(p.Spec.AccessModes, corev1.ReadWriteOnce)
	}) {
		t.Errorf("/data (mount %+v) is not a ReadWriteOnce claim template with a storage request", data)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.Sign() <= 0 || lim.Sign() <= 0 || req.Cmp(lim) > 0 {
			t.Errorf("resources %s: request %s, limit %s: want both, the request at most the limit", r, req.String(), lim.String())
		}
	}
}

// TestProbesAndGracePeriodFitTheJob: the probes reach /healthz and
// /readyz on the port the job listens on, from outside the pod, and the
// grace period outlasts the final checkpoint SIGTERM takes; the job's
// directories are on the volume.
func TestProbesAndGracePeriodFitTheJob(t *testing.T) {
	m, img := loadManifests(t), readDockerfile(t)
	job := m.loadJob(t, img)
	c := m.container(t)
	host, listen, err := net.SplitHostPort(job.HTTP.Addr)
	if err != nil {
		t.Fatalf("http.addr %q: %v", job.HTTP.Addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		t.Errorf("http.addr %s: the kubelet's probes cannot reach a loopback address", job.HTTP.Addr)
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("no %s probe over HTTP", p.name)
			continue
		}
		get := p.probe.HTTPGet
		n := get.Port.IntVal
		if get.Port.StrVal != "" {
			n = port(c, get.Port.StrVal)
		}
		if get.Path != p.path || n == 0 || strconv.Itoa(int(n)) != listen {
			t.Errorf("%s probe GET %s on port %v (%d), want %s on %s (http.addr %s)", p.name, get.Path, get.Port.String(), n, p.path, listen, job.HTTP.Addr)
		}
	}
	grace := m.sts.Spec.Template.Spec.TerminationGracePeriodSeconds
	if grace == nil || time.Duration(*grace)*time.Second <= job.Checkpoint.Timeout {
		t.Errorf("terminationGracePeriodSeconds %v, want more than checkpoint.timeout %v: SIGTERM takes a final checkpoint", fmtInt(grace), job.Checkpoint.Timeout)
	}
	dirs := map[string]string{"checkpoint.dir": job.Checkpoint.Dir, "state.dir": job.State.Dir}
	if f, ok := job.Sink.Config.(*file.Config); ok {
		dirs["sink.path"] = f.Path
	}
	for key, dir := range dirs {
		if !strings.HasPrefix(filepath.Clean(dir)+"/", "/data/") {
			t.Errorf("%s %s is not on the pod's volume (/data): it would be lost with the container", key, dir)
		}
	}
}

// TestServiceAndPodMonitorSelectThePod: the headless Service the
// StatefulSet names and the PodMonitor select the pod, on its http port;
// the PodMonitor scrapes /metrics and takes the job label from a pod label.
func TestServiceAndPodMonitorSelectThePod(t *testing.T) {
	m := loadManifests(t)
	pod, c := m.sts.Spec.Template.Labels, m.container(t)
	if m.svc.Spec.ClusterIP != corev1.ClusterIPNone || m.sts.Spec.ServiceName != m.svc.Name {
		t.Errorf("Service %s clusterIP %q; the StatefulSet's serviceName %q: want the headless Service", m.svc.Name, m.svc.Spec.ClusterIP, m.sts.Spec.ServiceName)
	}
	if len(m.svc.Spec.Selector) == 0 || !contains(pod, m.svc.Spec.Selector) {
		t.Errorf("the Service selects %v, the pod's labels are %v", m.svc.Spec.Selector, pod)
	}
	for _, p := range m.svc.Spec.Ports {
		if port(c, p.TargetPort.StrVal) == 0 && p.TargetPort.IntVal == 0 {
			t.Errorf("Service port %s targets %s, which the container does not expose", p.Name, p.TargetPort.String())
		}
	}
	spec := m.pm.Spec
	if !contains(pod, spec.Selector.MatchLabels) || len(spec.Selector.MatchLabels) == 0 {
		t.Errorf("the PodMonitor selects %v, the pod's labels are %v", spec.Selector.MatchLabels, pod)
	}
	if _, ok := pod[spec.JobLabel]; !ok {
		t.Errorf("the PodMonitor's jobLabel %q is not a label of the pod %v", spec.JobLabel, pod)
	}
	if len(spec.PodMetricsEndpoints) != 1 {
		t.Fatalf("the PodMonitor has %d endpoints, want 1", len(spec.PodMetricsEndpoints))
	}
	e := spec.PodMetricsEndpoints[0]
	if _, err := time.ParseDuration(e.Interval); port(c, e.Port) == 0 || e.Path != "/metrics" || err != nil {
		t.Errorf("the PodMonitor scrapes %s on port %q every %q, want /metrics on a named container port, a duration", e.Path, e.Port, e.Interval)
	}
	// instance is the pod's name, which a recreated pod keeps (its IP
	// changes): the alerts and the dashboard follow one process by it.
	if len(e.Relabelings) != 1 || e.Relabelings[0].TargetLabel != "instance" || strings.Join(e.Relabelings[0].SourceLabels, ",") != "__meta_kubernetes_pod_name" {
		t.Errorf("the PodMonitor's relabelings %+v do not make instance the pod's name", e.Relabelings)
	}
}

func volume(vs []corev1.Volume, name string) *corev1.Volume {
	for i := range vs {
		if vs[i].Name == name {
			return &vs[i]
		}
	}
	return nil
}

// contains reports whether labels has every pair of sel.
func contains(labels, sel map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func fmtInt(p *int64) string {
	if p == nil {
		return "<unset>"
	}
	return strconv.FormatInt(*p, 10)
}
