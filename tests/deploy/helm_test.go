//go:build deploy

package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"go.yaml.in/yaml/v4"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/client"
	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/internal/testutil/s3test"
)

// The chart's tests: it lints, it renders for the value sets people use
// into manifests Kubernetes 1.30's schemas accept, it refuses to render
// without its Redis and its root, and its Deployment runs under
// `podman kube play` against a real Redis and a real S3 server.

// chart is the chart's directory.
var chart = filepath.Join(repo, "deploy", "helm", "flightns")

// kubeVersion is the Kubernetes version the rendered manifests are
// validated against (kubectl-validate's built-in schemas cover
// 1.23–1.30).
const kubeVersion = "1.30"

// The pinned tools scripts/ensure-helm.sh installs.
const (
	helmBin     = "helm-v4.3.2"
	validateBin = "kubectl-validate-v0.0.4"
)

// tool is the path of a pinned tool in bin/; a missing one fails the
// test with the command that installs it.
func tool(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(repo, "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing (%v): run scripts/ensure-helm.sh", name, err)
	}
	return p
}

// values is a set of chart values (written as JSON, which is YAML).
type values map[string]any

// required are the values every render needs.
func required() values {
	return values{
		"root":  "s3://catalog/prod?region=eu-west-1",
		"redis": values{"url": "redis+sentinel://sentinel-0.redis:26379?master_name=flightns&addr=sentinel-1.redis:26379"},
	}
}

// valueSets are the renders every static test checks.
var valueSets = []struct {
	name string
	vals values
}{
	{"defaults with the required values", required()},
	{"everything enabled", values{
		"root":         "s3://catalog/prod?region=eu-west-1",
		"replicaCount": 5,
		"redis":        values{"url": "redis+cluster://redis-0.redis:6379?addr=redis-1.redis:6379", "replicaAcks": 1},
		"s3":           values{"accessKeyId": "AKIAEXAMPLE", "secretAccessKey": "secret", "region": "eu-west-1"},
		"auth":         values{"file": `{"tokens":[{"token":"t","name":"ops","role":"admin"}]}`},
		"tls": values{"enabled": true, "cert": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
			"key": "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n", "clientCA": true,
			"clientCAPEM": "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"},
		"oidc": values{"issuer": "https://idp.example.com", "audience": "flightns",
			"roles": values{"catalog-admins": "admin", "analysts": "read"}},
		"vend":                      values{"enabled": true, "roleArn": "arn:aws:iam::123456789012:role/flightns", "duration": "30m", "refreshOffset": "5m"},
		"serviceMonitor":            values{"enabled": true, "labels": values{"release": "prometheus"}},
		"serviceAccount":            values{"annotations": values{"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/flightns"}},
		"extraEnv":                  []any{values{"name": "FLIGHTNS_DROP_RETENTION", "value": "72h"}},
		"podDisruptionBudget":       values{"minAvailable": 3},
		"topologySpreadConstraints": []any{values{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": values{"matchLabels": values{"app.kubernetes.io/name": "flightns"}}}},
		"service":                   values{"type": "LoadBalancer"},
	}},
	{"existing secrets", values{
		"root":  "s3://catalog/prod",
		"redis": values{"existingSecret": "redis-url", "existingSecretKey": "sentinel-url"},
		"s3":    values{"existingSecret": "s3-keys"},
		"auth":  values{"existingSecret": "flightns-auth", "existingSecretKey": "auth.json"},
		"tls":   values{"enabled": true, "existingSecret": "flightns-cert", "clientCA": true},
	}},
}

// valuesFile writes vals where helm -f reads them.
func valuesFile(t *testing.T, vals values) string {
	t.Helper()
	b, err := json.Marshal(vals)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs a tool and returns its output (stdout and stderr together).
func run(ctx context.Context, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// render runs helm template for release with vals; it returns the
// output and helm's error.
func render(t *testing.T, release string, vals values) (string, error) {
	t.Helper()
	return run(t.Context(), tool(t, helmBin), "template", release, chart, "--namespace", "catalog",
		"--kube-version", kubeVersion+".0", "-f", valuesFile(t, vals))
}

// manifest is one rendered object.
type manifest map[string]any

func (m manifest) kind() string { return str(m, "kind") }
func (m manifest) name() string { return str(m, "metadata", "name") }

// manifests renders release with vals and parses every object.
func manifests(t *testing.T, release string, vals values) []manifest {
	t.Helper()
	out, err := render(t, release, vals)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var ms []manifest
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		// Into a plain map: the decoder gives nested maps the type
		// of the outermost.
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return ms
		}
		if err != nil {
			t.Fatalf("helm template wrote no YAML: %v\n%s", err, out)
		}
		if m != nil {
			ms = append(ms, manifest(m))
		}
	}
}

// get walks path (map keys, or list indices as decimal strings) from v;
// nil where there is nothing.
func get(v any, path ...string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case manifest:
			v = x[p]
		case values:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func str(v any, path ...string) string { s, _ := get(v, path...).(string); return s }

// byKind is the rendered objects of one kind.
func byKind(ms []manifest, kind string) []manifest {
	var out []manifest
	for _, m := range ms {
		if m.kind() == kind {
			out = append(out, m)
		}
	}
	return out
}

// one is the single rendered object of kind.
func one(t *testing.T, ms []manifest, kind string) manifest {
	t.Helper()
	of := byKind(ms, kind)
	if len(of) != 1 {
		t.Fatalf("%d objects of kind %s rendered, want 1", len(of), kind)
	}
	return of[0]
}

func TestHelmLintStrictPasses(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			out, err := run(t.Context(), tool(t, helmBin), "lint", "--strict", chart,
				"--kube-version", kubeVersion+".0", "-f", valuesFile(t, vs.vals))
			if err != nil {
				t.Fatalf("helm lint --strict: %v\n%s", err, out)
			}
		})
	}
}

func TestHelmNotesNameTheEndpointsAndWarnWhenOpen(t *testing.T) {
	for _, c := range []struct {
		name       string
		vals       values
		want, shun []string
	}{
		{"defaults with the required values", valueSets[0].vals,
			[]string{"http://cat-flightns.catalog.svc:31338", "grpc://cat-flightns.catalog.svc:31337", "WARNING: no authentication", "WARNING: TLS is off"}, nil},
		{"everything enabled", valueSets[1].vals,
			[]string{"https://cat-flightns.catalog.svc:31338", "grpc+tls://cat-flightns.catalog.svc:31337"}, []string{"WARNING"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t.Context(), tool(t, helmBin), "install", "cat", chart, "--dry-run=client", "--namespace", "catalog",
				"-f", valuesFile(t, c.vals))
			if err != nil {
				t.Fatalf("helm install --dry-run=client: %v\n%s", err, out)
			}
			_, notes, _ := strings.Cut(out, "NOTES:")
			for _, w := range c.want {
				if !strings.Contains(notes, w) {
					t.Errorf("NOTES lack %q:\n%s", w, notes)
				}
			}
			for _, w := range c.shun {
				if strings.Contains(notes, w) {
					t.Errorf("NOTES hold %q:\n%s", w, notes)
				}
			}
		})
	}
}

func TestHelmTemplateValidatesAgainstKubernetes130(t *testing.T) {
	validate := tool(t, validateBin)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			ms := manifests(t, "cat", vs.vals)
			// kubectl-validate knows Kubernetes' own kinds; the
			// ServiceMonitor is a CRD's, checked by its shape below.
			dir := t.TempDir()
			for i, m := range ms {
				if m.kind() == "ServiceMonitor" {
					continue
				}
				b, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d-%s-%s.json", i, m.kind(), m.name())), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			kubeValidate(t, validate, dir)
			checkDeployment(t, ms, vs.vals)
			checkServiceMonitor(t, ms, vs.vals)
		})
	}
}

// kubeValidate validates every file in dir with kubectl-validate
// against Kubernetes kubeVersion's schemas, and checks it read them all.
func kubeValidate(t *testing.T, validate, dir string) {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil || len(files) == 0 {
		t.Fatalf("nothing to validate in %s (%v)", dir, err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), validate, "--version", kubeVersion, "--output", "json", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil {
		t.Errorf("kubectl-validate --version %s: %v\n%s%s", kubeVersion, err, stdout.String(), stderr.String())
	}
	// Its answer: each file's objects' statuses.
	var report map[string][]struct{ Status, Message string }
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("kubectl-validate answered no JSON report: %v\n%s", err, stdout.String())
	}
	for _, f := range files {
		statuses, ok := report[filepath.Join(dir, f.Name())]
		if !ok {
			t.Errorf("kubectl-validate did not read %s", f.Name())
		}
		for _, st := range statuses {
			if st.Status != "Success" {
				t.Errorf("%s: %s %s", f.Name(), st.Status, st.Message)
			}
		}
	}
}

// checkDeployment checks what the schemas cannot: the pod runs hardened,
// probes the metrics port, outlives its drain, mounts what it needs, and
// reads every Secret it names from one that is rendered or was named as
// existing.
func checkDeployment(t *testing.T, ms []manifest, vals values) {
	t.Helper()
	d := one(t, ms, "Deployment")
	pod := get(d, "spec", "template", "spec")
	c := get(pod, "containers", "0")
	for path, want := range map[string]any{
		"securityContext.runAsNonRoot":                          true,
		"securityContext.runAsUser":                             10001,
		"securityContext.seccompProfile.type":                   "RuntimeDefault",
		"containers.0.securityContext.readOnlyRootFilesystem":   true,
		"containers.0.securityContext.allowPrivilegeEscalation": false,
		"containers.0.securityContext.runAsNonRoot":             true,
		"containers.0.securityContext.capabilities.drop.0":      "ALL",
		"containers.0.livenessProbe.httpGet.path":               "/healthz",
		"containers.0.readinessProbe.httpGet.path":              "/readyz",
		"containers.0.livenessProbe.httpGet.port":               31339,
		"containers.0.readinessProbe.httpGet.port":              31339,
	} {
		if got := get(pod, strings.Split(path, ".")...); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("pod spec %s = %v, want %v", path, got, want)
		}
	}
	if n, ok := get(d, "spec", "replicas").(int); !ok || n != intOr(vals["replicaCount"], 3) {
		t.Errorf("replicas = %v, want %d", get(d, "spec", "replicas"), intOr(vals["replicaCount"], 3))
	}
	env := map[string]any{}
	for _, e := range get(c, "env").([]any) {
		env[str(e, "name")] = e
	}
	grace, _ := get(pod, "terminationGracePeriodSeconds").(int)
	shutdown, err := time.ParseDuration(str(env["FLIGHTNS_SHUTDOWN_TIMEOUT"], "value"))
	if err != nil || time.Duration(grace)*time.Second <= shutdown {
		t.Errorf("terminationGracePeriodSeconds %d does not exceed FLIGHTNS_SHUTDOWN_TIMEOUT %v (%v)", grace, shutdown, err)
	}
	mounts := map[string]string{}
	for _, m := range get(c, "volumeMounts").([]any) {
		mounts[str(m, "mountPath")] = str(m, "name")
	}
	vols := map[string]any{}
	for _, v := range get(pod, "volumes").([]any) {
		vols[str(v, "name")] = v
	}
	for _, p := range []string{"/tmp", "/data"} {
		if get(vols[mounts[p]], "emptyDir") == nil {
			t.Errorf("%s is not an emptyDir (mounts %v)", p, mounts)
		}
	}
	// Every Secret the pod reads is one the chart renders or one the
	// values name as existing.
	have := map[string]bool{}
	for _, s := range byKind(ms, "Secret") {
		have[s.name()] = true
	}
	for _, group := range []string{"redis", "s3", "auth", "tls"} {
		if name := str(vals, group, "existingSecret"); name != "" {
			have[name] = true
		}
	}
	var reads []string
	for _, e := range env {
		if n := str(e, "valueFrom", "secretKeyRef", "name"); n != "" {
			reads = append(reads, n)
		}
	}
	for _, v := range vols {
		if n := str(v, "secret", "secretName"); n != "" {
			reads = append(reads, n)
		}
	}
	for _, n := range reads {
		if !have[n] {
			t.Errorf("the pod reads Secret %q, which is neither rendered nor named existing", n)
		}
	}
	if env["FLIGHTNS_REDIS"] == nil || str(env["FLIGHTNS_REDIS"], "valueFrom", "secretKeyRef", "name") == "" {
		t.Errorf("FLIGHTNS_REDIS does not come from a Secret: %v", env["FLIGHTNS_REDIS"])
	}
	if str(env["FLIGHTNS_ROOT"], "value") != str(vals, "root") {
		t.Errorf("FLIGHTNS_ROOT = %v, want %q", env["FLIGHTNS_ROOT"], str(vals, "root"))
	}
	if enabled, _ := get(vals, "tls", "enabled").(bool); enabled != (env["FLIGHTNS_TLS_CERT"] != nil) {
		t.Errorf("tls.enabled %v, FLIGHTNS_TLS_CERT %v", enabled, env["FLIGHTNS_TLS_CERT"])
	}
	svcPorts := map[string]bool{}
	for _, p := range get(one(t, ms, "Service"), "spec", "ports").([]any) {
		svcPorts[str(p, "name")] = true
	}
	for _, p := range []string{"flight", "rest", "metrics", "console"} {
		if !svcPorts[p] {
			t.Errorf("the Service has no port %s (%v)", p, svcPorts)
		}
	}
	if len(byKind(ms, "PodDisruptionBudget")) != 1 {
		t.Errorf("no PodDisruptionBudget rendered")
	}
}

// checkServiceMonitor checks the ServiceMonitor (a CRD no offline schema
// knows) by its shape: rendered when enabled, selecting the Service's
// pods' labels, scraping the Service's metrics port at /metrics.
func checkServiceMonitor(t *testing.T, ms []manifest, vals values) {
	t.Helper()
	sms := byKind(ms, "ServiceMonitor")
	enabled, _ := get(vals, "serviceMonitor", "enabled").(bool)
	if !enabled {
		if len(sms) != 0 {
			t.Errorf("a ServiceMonitor rendered while serviceMonitor.enabled is false")
		}
		return
	}
	sm := one(t, ms, "ServiceMonitor")
	svc := one(t, ms, "Service")
	if got := str(sm, "apiVersion"); got != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion %q", got)
	}
	if sm.name() == "" {
		t.Errorf("ServiceMonitor has no name")
	}
	sel, _ := get(sm, "spec", "selector", "matchLabels").(map[string]any)
	labels, _ := get(svc, "metadata", "labels").(map[string]any)
	if len(sel) == 0 {
		t.Errorf("ServiceMonitor selects nothing")
	}
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%v; the Service has %v", k, v, labels[k])
		}
	}
	for k, v := range get(vals, "serviceMonitor", "labels").(values) {
		if str(sm, "metadata", "labels", k) != v {
			t.Errorf("ServiceMonitor label %s = %q, want %v", k, str(sm, "metadata", "labels", k), v)
		}
	}
	eps, _ := get(sm, "spec", "endpoints").([]any)
	if len(eps) != 1 || str(eps[0], "port") != "metrics" || str(eps[0], "path") != "/metrics" {
		t.Fatalf("ServiceMonitor endpoints %v, want one on port metrics, path /metrics", eps)
	}
	for _, k := range []string{"interval", "scrapeTimeout"} {
		if _, err := time.ParseDuration(str(eps[0], k)); err != nil {
			t.Errorf("ServiceMonitor endpoint %s: %v", k, err)
		}
	}
	if ns := get(sm, "spec", "namespaceSelector", "matchNames"); fmt.Sprint(ns) != "[catalog]" {
		t.Errorf("ServiceMonitor namespaceSelector %v, want the release's namespace", ns)
	}
}

func intOr(v any, def int) int {
	if n, ok := v.(int); ok {
		return n
	}
	return def
}

func TestHelmRefusesToRenderWithoutWhatItNeeds(t *testing.T) {
	without := func(key string) values {
		v := required()
		delete(v, key)
		return v
	}
	with := func(key string, val any) values {
		v := required()
		v[key] = val
		return v
	}
	for _, c := range []struct {
		name string
		vals values
		want string
	}{
		{"no Redis", without("redis"), "set redis.url (redis://, redis+sentinel:// or redis+cluster://) or redis.existingSecret"},
		{"no root", without("root"), "set root to the catalog's s3://bucket/prefix"},
		{"nothing", values{}, "flightns: set redis.url"},
		{"a root that is no s3:// URI", with("root", "file:///data/root"), "at '/root'"},
		{"a Redis URL of another scheme", with("redis", values{"url": "http://redis:6379"}), "at '/redis/url'"},
		{"a grace period that cuts the drain short", with("terminationGracePeriodSeconds", 30), "terminationGracePeriodSeconds (30) must exceed shutdownTimeoutSeconds (30)"},
		{"a misspelt value", with("replicas", 3), "additional properties 'replicas' not allowed"},
		{"no replicas", with("replicaCount", 0), "at '/replicaCount'"},
		{"half the S3 keys", with("s3", values{"accessKeyId": "AKIA"}), "set both s3.accessKeyId and s3.secretAccessKey"},
		{"TLS with no certificate", with("tls", values{"enabled": true}), "tls.enabled needs tls.cert and tls.key, or tls.existingSecret"},
		{"vending with no role", with("vend", values{"enabled": true}), "vend.enabled needs vend.roleArn"},
		{"an unknown OIDC role", with("oidc", values{"issuer": "https://idp", "roles": values{"x": "superuser"}}), "/oidc/roles/x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := render(t, "cat", c.vals)
			if err == nil {
				t.Fatalf("helm template rendered:\n%s", out)
			}
			if !strings.Contains(out, c.want) {
				t.Fatalf("helm template failed without %q:\n%s", c.want, out)
			}
		})
	}
}

// TestHelmDeploymentRunsUnderKubePlay runs the rendered Deployment's pod
// with `podman kube play` (podman 4.3), the stand-in for a cluster here:
// this test's image, its own redis-server and MinIO on loopback, the
// chart's Secrets. What podman 4.3 lacks is bridged, nothing else is
// changed:
//   - It knows no Secret objects: a secretKeyRef names a podman secret
//     whose data is the Secret's data as JSON, so the test creates one
//     from each rendered Secret.
//   - Ports are published on the host, so the pod's ports are free ones
//     and there is one replica.
//   - The pod reaches the host's loopback (Redis, MinIO) through
//     slirp4netns at 10.0.2.2.
//   - It takes no stop timeout from terminationGracePeriodSeconds, and
//     stopping the pod takes its network away: the test stops the
//     container with the grace period.
func TestHelmDeploymentRunsUnderKubePlay(t *testing.T) {
	rs := redistest.Start(t)
	s3 := s3test.Start(t, "catalog")
	_, redisPort, _ := strings.Cut(rs.Addr(), ":")
	ports := map[string]int{"flight": freePort(t), "rest": freePort(t), "metrics": freePort(t), "console": freePort(t)}
	// Unique to the run (podman's pods and secrets are the machine's);
	// a release name has at most 53 characters.
	release := name(t, "r")
	vals := values{
		"replicaCount": 1,
		"image":        values{"repository": image[:strings.LastIndex(image, ":")], "tag": image[strings.LastIndex(image, ":")+1:]},
		"root":         strings.Replace(s3.URI("catalog", "helm"), "127.0.0.1", "10.0.2.2", 1),
		"redis":        values{"url": "redis://10.0.2.2:" + redisPort},
		"s3":           values{"accessKeyId": minioproc.AccessKey, "secretAccessKey": minioproc.SecretKey},
		"ports":        ports,
		"resources":    values{"requests": values{"cpu": "100m", "memory": "256Mi"}, "limits": values{"memory": "2Gi"}},
		"sql":          values{"memory": "256MB", "threads": 1},
	}
	ms := manifests(t, release, vals)
	for _, s := range byKind(ms, "Secret") {
		b, err := json.Marshal(get(s, "data"))
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(t.TempDir(), "secret.json")
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		podman(t, "secret", "create", s.name(), f)
		t.Cleanup(func() { _, _ = podmanOut(context.Background(), "secret", "rm", s.name()) })
	}
	b, err := json.Marshal(one(t, ms, "Deployment"))
	if err != nil {
		t.Fatal(err)
	}
	// podman names a Deployment's first pod <name>-pod-0, and its
	// containers <pod>-<container>.
	ctr := one(t, ms, "Deployment").name() + "-pod-0-flightns"
	kube := filepath.Join(t.TempDir(), "deployment.json")
	if err := os.WriteFile(kube, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := podmanOut(context.Background(), "logs", "--tail", "50", ctr)
			t.Logf("the pod's log:\n%s", out)
		}
		if out, err := podmanOut(context.Background(), "kube", "down", kube); err != nil {
			t.Errorf("podman kube down: %v\n%s", err, out)
		}
	})
	podman(t, "kube", "play", "--network", "slirp4netns:allow_host_loopback=true", kube)

	// The pod runs as the chart asks: uid 10001 on a read-only root.
	if got := podman(t, "inspect", "--format", "{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}", ctr); got != "10001:10001 true" {
		t.Errorf("the container runs as %q (user, read-only root), want 10001:10001 true", got)
	}
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports["metrics"]), 2*time.Minute)
	c, err := client.New(client.Config{URL: fmt.Sprintf("http://127.0.0.1:%d", ports["rest"])})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := c.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{"sales"}}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if _, err := c.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{"sales", "orders"}}); err != nil {
		t.Fatalf("declare table: %v", err)
	}
	list, err := c.ListTables(ctx, api.ListTablesRequest{ID: api.ID{"sales"}})
	if err != nil || !slices.Equal(list.Tables, []string{"orders"}) {
		t.Fatalf("list tables: %v, %v", list, err)
	}
	d, err := c.DescribeTable(ctx, api.DescribeTableRequest{ID: api.ID{"sales", "orders"}})
	if err != nil {
		t.Fatalf("describe table: %v", err)
	}
	if !strings.HasPrefix(d.Location, "s3://catalog/helm/") {
		t.Errorf("the table lives at %q, not below the chart's root s3://catalog/helm", d.Location)
	}
	// The pod wrote to the test's MinIO with the keys from its Secret.
	objs, err := s3.Client().ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("catalog"), Prefix: aws.String("helm/")})
	if err != nil || len(objs.Contents) == 0 {
		t.Errorf("nothing below s3://catalog/helm/ (%v): the pod did not write its root", err)
	}
	// The catalog is in the test's Redis.
	keys, err := rs.Client().Keys(ctx, "*").Result()
	if err != nil || len(keys) == 0 {
		t.Errorf("the test's Redis holds no keys (%v): the pod did not use it", err)
	}

	// Stopped as a cluster stops it (SIGTERM, then the grace period,
	// which podman 4.3 does not take from the pod; the container alone,
	// as stopping the pod would take its network away mid-drain), it
	// drains and exits 0.
	grace, _ := get(one(t, ms, "Deployment"), "spec", "template", "spec", "terminationGracePeriodSeconds").(int)
	podman(t, "stop", "--time", strconv.Itoa(grace), ctr)
	if got := podman(t, "inspect", "--format", "{{.State.ExitCode}}", ctr); got != "0" {
		t.Errorf("the server exited %s on SIGTERM, want 0", got)
	}
}
