// Package kubernetes holds deltafs's Kubernetes manifests (the CSI node
// plugin and an example training job); its test validates them.
package kubernetes

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/yaml"

	"github.com/deltafs/deltafs/csi"
)

// The manifests validate against the Kubernetes API's own types (k8s.io/api,
// the source of its OpenAPI schemas), strictly: an unknown or misspelt
// field, a wrong type or a missing kind fails. Then what ties them
// together: names, selectors, volumes, the driver's name, and volume
// attributes and secrets the plugin accepts.

// objects are the manifests' documents by kind/name.
type objects map[string]any

func load(t *testing.T) objects {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("manifests: %v, %v", files, err)
	}
	objs := objects{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			var obj any
			switch head.APIVersion + " " + head.Kind {
			case "storage.k8s.io/v1 CSIDriver":
				obj = &storagev1.CSIDriver{}
			case "v1 ServiceAccount":
				obj = &corev1.ServiceAccount{}
			case "rbac.authorization.k8s.io/v1 ClusterRole":
				obj = &rbacv1.ClusterRole{}
			case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
				obj = &rbacv1.ClusterRoleBinding{}
			case "apps/v1 DaemonSet":
				obj = &appsv1.DaemonSet{}
			case "v1 Secret":
				obj = &corev1.Secret{}
			case "v1 PersistentVolume":
				obj = &corev1.PersistentVolume{}
			case "v1 PersistentVolumeClaim":
				obj = &corev1.PersistentVolumeClaim{}
			case "v1 Service":
				obj = &corev1.Service{}
			case "batch/v1 Job":
				obj = &batchv1.Job{}
			default:
				t.Fatalf("%s document %d: %q %q is not a kind these manifests use", f, i, head.APIVersion, head.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Fatalf("%s document %d (%s): %v", f, i, head.Kind, err)
			}
			if head.Metadata.Name == "" {
				t.Fatalf("%s document %d (%s): no metadata.name", f, i, head.Kind)
			}
			objs[head.Kind+"/"+head.Metadata.Name] = obj
		}
	}
	return objs
}

func TestManifests(t *testing.T) {
	objs := load(t)
	get := func(key string) any {
		o, ok := objs[key]
		if !ok {
			t.Fatalf("no %s in the manifests", key)
		}
		return o
	}
	driver := get("CSIDriver/" + csi.Name).(*storagev1.CSIDriver)
	if driver.Spec.AttachRequired == nil || *driver.Spec.AttachRequired {
		t.Error("the CSIDriver must not require attach: the plugin has no ControllerPublish")
	}

	ds := get("DaemonSet/deltafs-csi-node").(*appsv1.DaemonSet)
	podSpec := ds.Spec.Template.Spec
	checkPod(t, "DaemonSet", ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels, podSpec)
	if sa := podSpec.ServiceAccountName; objs["ServiceAccount/"+sa] == nil {
		t.Errorf("the DaemonSet's service account %q is not in the manifests", sa)
	}
	var plugin *corev1.Container
	for i := range podSpec.Containers {
		if podSpec.Containers[i].Name == "deltafs" {
			plugin = &podSpec.Containers[i]
		}
	}
	if plugin == nil {
		t.Fatal("no deltafs container in the DaemonSet")
	}
	if plugin.SecurityContext == nil || plugin.SecurityContext.Privileged == nil || !*plugin.SecurityContext.Privileged {
		t.Error("the deltafs container is not privileged: it mounts FUSE file systems into the kubelet's directory")
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range plugin.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m, ok := mounts["/var/lib/kubelet"]; !ok || m.MountPropagation == nil || *m.MountPropagation != corev1.MountPropagationBidirectional {
		t.Error("the kubelet directory is not mounted Bidirectional: the pods would not see the mounts")
	}
	if _, ok := mounts["/dev/fuse"]; !ok {
		t.Error("/dev/fuse is not mounted into the deltafs container")
	}
	if args := strings.Join(plugin.Args, " "); !strings.HasPrefix(args, "csi ") || !strings.Contains(args, "--endpoint=unix:///csi/csi.sock") || !strings.Contains(args, "--node-id=") {
		t.Errorf("the deltafs container's args %q do not run the plugin", args)
	}
	for _, c := range podSpec.Containers {
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--kubelet-registration-path=") && !strings.Contains(a, "/plugins/"+csi.Name+"/") {
				t.Errorf("the registrar registers %q, not the driver's directory", a)
			}
		}
	}

	crb := get("ClusterRoleBinding/deltafs-csi-node").(*rbacv1.ClusterRoleBinding)
	if objs["ClusterRole/"+crb.RoleRef.Name] == nil || len(crb.Subjects) == 0 || objs["ServiceAccount/"+crb.Subjects[0].Name] == nil {
		t.Error("the ClusterRoleBinding names a role or an account the manifests do not have")
	}

	pv := get("PersistentVolume/imagenet").(*corev1.PersistentVolume)
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != csi.Name || pv.Spec.CSI.VolumeHandle == "" {
		t.Fatalf("the PersistentVolume is not a %s volume", csi.Name)
	}
	secrets := map[string]string{}
	if ref := pv.Spec.CSI.NodePublishSecretRef; ref != nil {
		sec := get("Secret/" + ref.Name).(*corev1.Secret)
		for k, v := range sec.StringData {
			secrets[k] = v
		}
	}
	if err := csi.CheckVolume(pv.Spec.CSI.VolumeAttributes, secrets); err != nil {
		t.Errorf("the plugin would refuse the PersistentVolume: %v", err)
	}
	pvc := get("PersistentVolumeClaim/imagenet").(*corev1.PersistentVolumeClaim)
	if pvc.Spec.VolumeName != pv.Name || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "" {
		t.Error("the claim does not bind the static PersistentVolume")
	}

	job := get("Job/imagenet-train").(*batchv1.Job)
	checkPod(t, "Job", nil, nil, job.Spec.Template.Spec)
	if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Error("the training job is not an indexed Job: its pods have no rank")
	}
	if job.Spec.Completions == nil || fmt.Sprint(*job.Spec.Completions) != pv.Spec.CSI.VolumeAttributes["shards"] {
		t.Errorf("the job's %v ranks do not match the volume's %s shards: a rank would read nothing or two ranks one shard", job.Spec.Completions, pv.Spec.CSI.VolumeAttributes["shards"])
	}
	claimed := false
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name {
			claimed = true
		}
	}
	if !claimed {
		t.Error("the training job does not mount the table's claim")
	}
	svc := get("Service/imagenet-train").(*corev1.Service)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || job.Spec.Template.Spec.Subdomain != svc.Name {
		t.Error("the rendezvous Service is not the job's headless subdomain")
	}
}

// checkPod checks a pod template: the selector matches its labels, every
// container has a name and an image, every volume mount a volume.
func checkPod(t *testing.T, what string, selector, labels map[string]string, spec corev1.PodSpec) {
	t.Helper()
	for k, v := range selector {
		if labels[k] != v {
			t.Errorf("%s: the selector %s=%s does not match the template's labels", what, k, v)
		}
	}
	vols := map[string]bool{}
	for _, v := range spec.Volumes {
		vols[v.Name] = true
	}
	if len(spec.Containers) == 0 {
		t.Errorf("%s: no containers", what)
	}
	for _, c := range spec.Containers {
		if c.Name == "" || c.Image == "" {
			t.Errorf("%s: a container without a name or an image", what)
		}
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] {
				t.Errorf("%s: container %s mounts volume %q, which the pod does not have", what, c.Name, m.Name)
			}
		}
	}
}
