// helmrender renders a Helm 3 chart the way `helm template` does, for tests on machines
// without helm. It uses the same building blocks as helm: Go's text/template, sprig v3
// (minus env/expandenv, as helm removes them), sigs.k8s.io/yaml for toYaml/fromYaml and
// for reading values (so numbers from values files are float64, as in helm), gobwas/glob
// for .Files.Glob, helm's coalescing of values and a port of its --set parser.
//
// Subcharts: unpacked directories (or links) under charts/, with the alias and condition
// of Chart.yaml dependencies, values coalesced under their key, globals. Not implemented (the
// faultline chart does not use them): packaged .tgz subcharts, library charts, import-values,
// tags, values.schema.json validation, toToml, lookup against a cluster (it
// returns an empty map, as `helm template` does), post-renderers, hooks ordering.
//
// Usage:
//
//	helmrender [--strict] [--name NAME] [--namespace NS] [--kube-version v1.30.0]
//	           [--api-versions group/version[/Kind]]... [-f values.yaml]...
//	           [--set k=v]... [--set-string k=v]... [--show-notes] CHART_DIR
//
// Output: the rendered manifests, each preceded by "---" and "# Source: <chart>/templates/<file>",
// in helm's install order. Exit status 1 with helm-like messages on any error, including
// a manifest that is not valid YAML.
package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/gobwas/glob"
	"sigs.k8s.io/yaml"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// Metadata mirrors helm's chart.Metadata: templates see .Chart.Name, .Chart.Version, ...
type Metadata struct {
	Name         string            `json:"name"`
	Home         string            `json:"home,omitempty"`
	Sources      []string          `json:"sources,omitempty"`
	Version      string            `json:"version"`
	Description  string            `json:"description,omitempty"`
	Keywords     []string          `json:"keywords,omitempty"`
	Maintainers  []interface{}     `json:"maintainers,omitempty"`
	Icon         string            `json:"icon,omitempty"`
	APIVersion   string            `json:"apiVersion"`
	Condition    string            `json:"condition,omitempty"`
	Tags         string            `json:"tags,omitempty"`
	AppVersion   string            `json:"appVersion,omitempty"`
	Deprecated   bool              `json:"deprecated,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	KubeVersion  string            `json:"kubeVersion,omitempty"`
	Dependencies []interface{}     `json:"dependencies,omitempty"`
	Type         string            `json:"type,omitempty"`
}

// KubeVersion mirrors helm's chartutil.KubeVersion.
type KubeVersion struct {
	Version string
	Major   string
	Minor   string
}

func (kv *KubeVersion) String() string     { return kv.Version }
func (kv *KubeVersion) GitVersion() string { return kv.Version }

// VersionSet mirrors helm's chartutil.VersionSet.
type VersionSet []string

func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

type HelmVersion struct {
	Version      string
	GitCommit    string
	GitTreeState string
	GoVersion    string
}

type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
	HelmVersion HelmVersion
}

// Files mirrors helm's engine.files: every chart file outside templates/ and charts/.
type Files map[string][]byte

func (f Files) GetBytes(name string) []byte { return f[name] }
func (f Files) Get(name string) string      { return string(f[name]) }

func (f Files) Glob(pattern string) Files {
	g, err := glob.Compile(pattern, '/')
	if err != nil {
		g, _ = glob.Compile("**")
	}
	nf := Files{}
	for name, contents := range f {
		if g.Match(name) {
			nf[name] = contents
		}
	}
	return nf
}

func (f Files) AsConfig() string {
	if f == nil {
		return ""
	}
	m := map[string]string{}
	for k, v := range f {
		m[path.Base(k)] = string(v)
	}
	return toYAML(m)
}

func (f Files) AsSecrets() string {
	if f == nil {
		return ""
	}
	m := map[string]string{}
	for k, v := range f {
		m[path.Base(k)] = encodeBase64(v)
	}
	return toYAML(m)
}

func (f Files) Lines(name string) []string {
	if f == nil || f[name] == nil {
		return []string{}
	}
	return strings.Split(string(f[name]), "\n")
}

func encodeBase64(b []byte) string {
	return base64.StdEncoding.EncodeToString(b)
}

// ---- helm's extra template functions (pkg/engine/funcs.go) ----

func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(str string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromYAMLArray(str string) []interface{} {
	a := []interface{}{}
	if err := yaml.Unmarshal([]byte(str), &a); err != nil {
		a = []interface{}{err.Error()}
	}
	return a
}

func toJSON(v interface{}) string {
	data, err := jsonMarshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(str string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := jsonUnmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(str string) []interface{} {
	a := []interface{}{}
	if err := jsonUnmarshal([]byte(str), &a); err != nil {
		a = []interface{}{err.Error()}
	}
	return a
}

const recursionMaxNums = 1000

type renderer struct {
	strict bool
}

func (r *renderer) funcMap(t *template.Template) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = toYAML
	f["fromYaml"] = fromYAML
	f["fromYamlArray"] = fromYAMLArray
	f["toJson"] = toJSON
	f["fromJson"] = fromJSON
	f["fromJsonArray"] = fromJSONArray
	f["toToml"] = func(interface{}) string { return "toToml is not implemented by helmrender" }
	f["lookup"] = func(string, string, string, string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	f["required"] = func(warn string, val interface{}) (interface{}, error) {
		if val == nil {
			return val, errors.New(warn)
		} else if s, ok := val.(string); ok && s == "" {
			return val, errors.New(warn)
		}
		return val, nil
	}
	included := map[string]int{}
	f["include"] = func(name string, data interface{}) (string, error) {
		var buf strings.Builder
		if v, ok := included[name]; ok {
			if v > recursionMaxNums {
				return "", fmt.Errorf("unable to execute template: rendering template has a nested reference name: %s", name)
			}
			included[name]++
		} else {
			included[name] = 1
		}
		err := t.ExecuteTemplate(&buf, name, data)
		included[name]--
		return buf.String(), err
	}
	f["tpl"] = func(tpl string, vals interface{}) (string, error) {
		c, err := t.Clone()
		if err != nil {
			return "", fmt.Errorf("cannot clone template: %w", err)
		}
		c.Funcs(r.funcMap(c))
		c, err = c.New(t.Name()).Parse(tpl)
		if err != nil {
			return "", fmt.Errorf("cannot parse template %q: %w", tpl, err)
		}
		var buf strings.Builder
		if err := c.Execute(&buf, vals); err != nil {
			return "", fmt.Errorf("error during tpl function execution for %q: %w", tpl, err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	return f
}

// ---- chart loading ----

type chart struct {
	dir       string
	meta      Metadata
	values    map[string]interface{}
	templates map[string]string // "<prefix>/templates/x.yaml" -> text
	files     Files
	prefix    string // "parent" or "parent/charts/sub": template names and .Template.BasePath
	subcharts []*chart
}

// dependency is the part of a Chart.yaml dependency that rendering needs.
type dependency struct {
	Name      string `json:"name"`
	Alias     string `json:"alias"`
	Condition string `json:"condition"`
}

func loadIgnore(dir string) []string {
	data, err := os.ReadFile(filepath.Join(dir, ".helmignore"))
	if err != nil {
		return nil
	}
	var pats []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pats = append(pats, line)
	}
	return pats
}

// ignored implements the common subset of .helmignore: glob on the base name or the
// relative path, a trailing "/" for directories only, "!" to negate.
func ignored(pats []string, rel string, isDir bool) bool {
	result := false
	for _, p := range pats {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		dirOnly := strings.HasSuffix(p, "/")
		p = strings.TrimSuffix(p, "/")
		if dirOnly && !isDir {
			continue
		}
		m1, _ := path.Match(p, rel)
		m2, _ := path.Match(p, path.Base(rel))
		if m1 || m2 {
			result = !neg
		}
	}
	return result
}

// walk follows symlinks like helm's sympath.Walk, so a chart may link to files kept
// elsewhere in the repository (helm package stores the link targets' contents).
func walk(root, rel string, fn func(rel string, data []byte) error, pats []string) error {
	if rel == "charts" {
		return nil // loaded as subcharts
	}
	full := filepath.Join(root, rel)
	entries, err := os.ReadDir(full)
	if err != nil {
		return err
	}
	for _, e := range entries {
		r := path.Join(rel, e.Name())
		info, err := os.Stat(filepath.Join(root, r)) // follows symlinks
		if err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		if ignored(pats, r, info.IsDir()) {
			continue
		}
		if info.IsDir() {
			if err := walk(root, r, fn, pats); err != nil {
				return err
			}
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, r))
		if err != nil {
			return err
		}
		if err := fn(r, data); err != nil {
			return err
		}
	}
	return nil
}

func loadChart(dir, parentPrefix string) (*chart, error) {
	c := &chart{dir: dir, templates: map[string]string{}, files: Files{}}
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, fmt.Errorf("Chart.yaml file is missing: %w", err)
	}
	if err := yaml.UnmarshalStrict(raw, &c.meta); err != nil {
		return nil, fmt.Errorf("cannot load Chart.yaml: %w", err)
	}
	if c.meta.APIVersion != "v2" {
		return nil, fmt.Errorf("Chart.yaml: apiVersion must be v2, got %q", c.meta.APIVersion)
	}
	if c.meta.Name == "" || c.meta.Version == "" {
		return nil, errors.New("Chart.yaml: name and version are required")
	}
	if !regexp.MustCompile(`^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`).MatchString(c.meta.Version) {
		return nil, fmt.Errorf("Chart.yaml: version %q is not a SemVerV2", c.meta.Version)
	}
	if c.meta.Type != "" && c.meta.Type != "application" {
		return nil, fmt.Errorf("Chart.yaml: helmrender renders application charts only, not %q", c.meta.Type)
	}
	c.prefix = c.meta.Name
	if parentPrefix != "" {
		c.prefix = path.Join(parentPrefix, "charts", c.meta.Name)
	}
	c.values = map[string]interface{}{}
	if raw, err := os.ReadFile(filepath.Join(dir, "values.yaml")); err == nil {
		if c.values, err = readValues(raw); err != nil {
			return nil, fmt.Errorf("cannot load values.yaml: %w", err)
		}
	}
	pats := loadIgnore(dir)
	// Subcharts: unpacked chart directories (or links to them) under charts/.
	if entries, err := os.ReadDir(filepath.Join(dir, "charts")); err == nil {
		for _, e := range entries {
			sub := filepath.Join(dir, "charts", e.Name())
			if info, err := os.Stat(sub); err != nil || !info.IsDir() {
				return nil, fmt.Errorf("charts/%s: only unpacked subchart directories are supported by helmrender", e.Name())
			}
			sc, err := loadChart(sub, c.prefix)
			if err != nil {
				return nil, fmt.Errorf("charts/%s: %w", e.Name(), err)
			}
			c.subcharts = append(c.subcharts, sc)
		}
	}
	err = walk(dir, "", func(rel string, data []byte) error {
		switch {
		case strings.HasPrefix(rel, "templates/"):
			c.templates[path.Join(c.prefix, rel)] = string(data)
		case strings.HasPrefix(rel, "charts/"):
		case rel == "Chart.yaml" || rel == "Chart.lock" || rel == "values.yaml" ||
			rel == "values.schema.json" || rel == "requirements.yaml" || rel == ".helmignore":
		default:
			c.files[rel] = data
		}
		return nil
	}, pats)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func readValues(data []byte) (map[string]interface{}, error) {
	v := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if v == nil {
		v = map[string]interface{}{}
	}
	return v, nil
}

// mergeMaps is helm's mergeMaps for several -f files: later files win, maps merge.
func mergeMaps(a, b map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if v, ok := v.(map[string]interface{}); ok {
			if bv, ok := out[k]; ok {
				if bv, ok := bv.(map[string]interface{}); ok {
					out[k] = mergeMaps(bv, v)
					continue
				}
			}
		}
		out[k] = v
	}
	return out
}

// coalesce is helm's chartutil.CoalesceTables for the chart's own values: user values
// (dst) win, chart defaults (src) fill in, a user null deletes a default.
func coalesce(dst, src map[string]interface{}, prefix string) map[string]interface{} {
	if dst == nil {
		dst = map[string]interface{}{}
	}
	for key, val := range src {
		if value, ok := dst[key]; ok {
			if value == nil {
				delete(dst, key)
			} else if dv, ok := value.(map[string]interface{}); ok {
				if sv, ok := val.(map[string]interface{}); ok {
					coalesce(dv, sv, prefix+key+".")
				} else if val != nil {
					fmt.Fprintf(os.Stderr, "coalesce.go: warning: skipped value for %s%s: Not a table.\n", prefix, key)
				}
			} else if _, ok := val.(map[string]interface{}); ok && value != nil {
				fmt.Fprintf(os.Stderr, "coalesce.go: warning: destination for %s%s is a table. Ignoring non-table value (%v)\n", prefix, key, value)
				dst[key] = val
			}
		} else {
			dst[key] = val
		}
	}
	return dst
}

// dependencies returns the subcharts that are enabled, with the key of their values (alias or name).
func (c *chart) dependencies(vals map[string]interface{}) ([]*chart, []string, error) {
	var deps []dependency
	for _, d := range c.meta.Dependencies {
		raw, _ := jsonMarshal(d)
		var dep dependency
		if err := jsonUnmarshal(raw, &dep); err != nil {
			return nil, nil, err
		}
		deps = append(deps, dep)
	}
	var subs []*chart
	var keys []string
	for _, sc := range c.subcharts {
		key := sc.meta.Name
		enabled := true
		for _, d := range deps {
			if d.Name != sc.meta.Name {
				continue
			}
			if d.Alias != "" {
				key = d.Alias
			}
			for _, cond := range strings.Split(d.Condition, ",") {
				cond = strings.TrimSpace(cond)
				if cond == "" {
					continue
				}
				if v, ok := lookupPath(vals, cond); ok {
					if b, ok := v.(bool); ok {
						enabled = b
						break
					}
				}
			}
		}
		if enabled {
			subs = append(subs, sc)
			keys = append(keys, key)
		}
	}
	return subs, keys, nil
}

func lookupPath(m map[string]interface{}, dotted string) (interface{}, bool) {
	var cur interface{} = m
	for _, k := range strings.Split(dotted, ".") {
		mm, ok := cur.(map[string]interface{})
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// coalesceDeps gives every enabled subchart its values under its key in the parent's values
// (user values win over the subchart's defaults) and the parent's globals, recursively —
// so a parent's templates see .Values.<sub> complete, as in helm.
func coalesceDeps(c *chart, vals map[string]interface{}) error {
	subs, keys, err := c.dependencies(vals)
	if err != nil {
		return err
	}
	globals, _ := vals["global"].(map[string]interface{})
	for i, sc := range subs {
		sub, _ := vals[keys[i]].(map[string]interface{})
		if sub == nil {
			sub = map[string]interface{}{}
		}
		sub = coalesce(sub, sc.values, keys[i]+".")
		if globals != nil {
			g, _ := sub["global"].(map[string]interface{})
			sub["global"] = coalesce(g, globals, keys[i]+".global.")
		}
		vals[keys[i]] = sub
		if err := coalesceDeps(sc, sub); err != nil {
			return err
		}
	}
	return nil
}

// ---- rendering ----

// Helm's install order (pkg/releaseutil/kind_sorter.go).
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding",
	"RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
}

type manifest struct {
	source  string
	content string
	kind    string
	name    string
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

func render(c *chart, vals map[string]interface{}, release map[string]interface{}, caps *Capabilities,
	strict, showNotes bool) ([]manifest, string, error) {
	r := &renderer{strict: strict}
	t := template.New("gotpl")
	if strict {
		t.Option("missingkey=error")
	} else {
		t.Option("missingkey=zero")
	}
	t.Funcs(r.funcMap(t))

	type unit struct {
		c    *chart
		vals map[string]interface{}
	}
	owner := map[string]unit{}
	var collect func(c *chart, vals map[string]interface{}) error
	collect = func(c *chart, vals map[string]interface{}) error {
		for n := range c.templates {
			owner[n] = unit{c, vals}
		}
		subs, keys, err := c.dependencies(vals)
		if err != nil {
			return err
		}
		for i, sc := range subs {
			sv, _ := vals[keys[i]].(map[string]interface{})
			if err := collect(sc, sv); err != nil {
				return err
			}
		}
		return nil
	}
	if err := collect(c, vals); err != nil {
		return nil, "", err
	}
	names := make([]string, 0, len(owner))
	for n := range owner {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := t.New(n).Parse(owner[n].c.templates[n]); err != nil {
			return nil, "", fmt.Errorf("parse error at (%s): %w", n, err)
		}
	}

	var out []manifest
	notes := ""
	for _, n := range names {
		base := path.Base(n)
		if strings.HasPrefix(base, "_") {
			continue
		}
		u := owner[n]
		isNotes := strings.HasSuffix(n, "/NOTES.txt")
		if isNotes && u.c != c {
			continue // helm shows the parent's notes only
		}
		data := map[string]interface{}{
			"Values":       u.vals,
			"Release":      release,
			"Chart":        &u.c.meta,
			"Capabilities": caps,
			"Files":        u.c.files,
			"Template":     map[string]interface{}{"Name": n, "BasePath": path.Join(u.c.prefix, "templates")},
		}
		var buf strings.Builder
		if err := t.ExecuteTemplate(&buf, n, data); err != nil {
			return nil, "", cleanupExecError(n, err)
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if isNotes {
			notes = text
			continue
		}
		if !strings.HasSuffix(n, ".yaml") && !strings.HasSuffix(n, ".yml") && !strings.HasSuffix(n, ".tpl") {
			continue
		}
		for _, doc := range docSep.Split(text, -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				return nil, "", fmt.Errorf("YAML parse error on %s: %w", n, err)
			}
			var any interface{}
			if err := yaml.UnmarshalStrict([]byte(doc), &any); err != nil {
				return nil, "", fmt.Errorf("YAML parse error on %s: %w", n, err)
			}
			if head.Kind == "" {
				return nil, "", fmt.Errorf("%s: manifest has no kind:\n%s", n, doc)
			}
			out = append(out, manifest{source: n, content: strings.TrimSpace(doc), kind: head.Kind, name: head.Metadata.Name})
		}
	}
	rank := func(k string) int {
		for i, x := range installOrder {
			if x == k {
				return i
			}
		}
		return len(installOrder)
	}
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i].kind) < rank(out[j].kind) })
	_ = showNotes
	return out, notes, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		b.WriteString(l)
		b.WriteString("\n")
	}
	return b.String()
}

// cleanupExecError shortens text/template errors the way helm does.
func cleanupExecError(name string, err error) error {
	var tErr template.ExecError
	if errors.As(err, &tErr) {
		return fmt.Errorf("execution error at (%s): %s", tErr.Name, strings.TrimPrefix(tErr.Err.Error(), "error calling fail: "))
	}
	return fmt.Errorf("%s: %w", name, err)
}

func parseKubeVersion(v string) (KubeVersion, error) {
	m := regexp.MustCompile(`^v?(\d+)\.(\d+)(\.\d+)?`).FindStringSubmatch(v)
	if m == nil {
		return KubeVersion{}, fmt.Errorf("invalid kube version %q", v)
	}
	patch := m[3]
	if patch == "" {
		patch = ".0"
	}
	return KubeVersion{Version: "v" + m[1] + "." + m[2] + patch, Major: m[1], Minor: m[2]}, nil
}

// Helm's default API versions (a subset that matters to charts: the built-in groups).
var defaultAPIVersions = []string{
	"v1", "apps/v1", "batch/v1", "policy/v1", "networking.k8s.io/v1", "rbac.authorization.k8s.io/v1",
	"storage.k8s.io/v1", "autoscaling/v2", "apiextensions.k8s.io/v1", "coordination.k8s.io/v1",
	"scheduling.k8s.io/v1", "node.k8s.io/v1", "discovery.k8s.io/v1", "admissionregistration.k8s.io/v1",
}

func main() {
	var files, sets, setStrings, apiVersions multiFlag
	strict := flag.Bool("strict", false, "fail on a reference to a missing value (helm lint --strict)")
	name := flag.String("name", "release-name", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	kubeVersion := flag.String("kube-version", "v1.30.0", "Kubernetes version for .Capabilities.KubeVersion")
	showNotes := flag.Bool("show-notes", false, "print the rendered NOTES.txt after the manifests")
	outDir := flag.String("output-dir", "", "also write each manifest to DIR/<source>")
	flag.Var(&files, "f", "values file (repeatable)")
	flag.Var(&files, "values", "values file (repeatable)")
	flag.Var(&sets, "set", "set values on the command line (repeatable; a.b=c,d=e)")
	flag.Var(&setStrings, "set-string", "set STRING values on the command line (repeatable)")
	flag.Var(&apiVersions, "api-versions", "extra API versions for .Capabilities.APIVersions (repeatable)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: helmrender [flags] CHART_DIR\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *name, *namespace, *kubeVersion, files, sets, setStrings, apiVersions,
		*strict, *showNotes, *outDir); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}

func run(dir, name, namespace, kubeVersion string, files, sets, setStrings, apiVersions []string,
	strict, showNotes bool, outDir string) error {
	c, err := loadChart(dir, "")
	if err != nil {
		return err
	}
	user := map[string]interface{}{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		v, err := readValues(raw)
		if err != nil {
			return fmt.Errorf("failed to parse %s: %w", f, err)
		}
		user = mergeMaps(user, v)
	}
	for _, s := range sets {
		if err := parseInto(s, user, false); err != nil {
			return fmt.Errorf("failed parsing --set data: %w", err)
		}
	}
	for _, s := range setStrings {
		if err := parseInto(s, user, true); err != nil {
			return fmt.Errorf("failed parsing --set-string data: %w", err)
		}
	}
	vals := coalesce(user, c.values, "")
	if err := coalesceDeps(c, vals); err != nil {
		return err
	}

	kv, err := parseKubeVersion(kubeVersion)
	if err != nil {
		return err
	}
	caps := &Capabilities{
		KubeVersion: kv,
		APIVersions: append(VersionSet(append([]string{}, defaultAPIVersions...)), apiVersions...),
		HelmVersion: HelmVersion{Version: "v3.14.0+helmrender"},
	}
	release := map[string]interface{}{
		"Name": name, "Namespace": namespace, "IsUpgrade": false, "IsInstall": true,
		"Revision": 1, "Service": "Helm",
	}
	ms, notes, err := render(c, vals, release, caps, strict, showNotes)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for _, m := range ms {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", m.source, m.content)
		if outDir != "" {
			p := filepath.Join(outDir, m.source)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, fs.FileMode(0o644))
			if err != nil {
				return err
			}
			fmt.Fprintf(f, "---\n%s\n", m.content)
			f.Close()
		}
	}
	if showNotes && strings.TrimSpace(notes) != "" {
		fmt.Fprintf(&out, "\nNOTES:\n%s\n", notes)
	}
	_, err = os.Stdout.Write(out.Bytes())
	return err
}
