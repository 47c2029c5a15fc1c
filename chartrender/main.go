// chart-render: render a packaged Helm chart with a values file, client-side, the way
// `helm template --include-crds` does (hooks included), and print every object as JSON.
//
//	chart-render --chart <chart.tgz> --values <values.json> --name <release> --namespace <ns> \
//	    [--kube-version v1.35.4] [--api-versions security.openshift.io/v1,...]
//
// Output on stdout: a JSON list of {"source": template path, "hook": the hook events ("" for an
// ordinary object), "object": the object}. CRDs from the chart's crds/ directories come first, as
// Helm writes them; objects of a hook come last. It is built by scripts in this repository from
// helm.sh/helm/v3 pinned in go.mod (make chartrender); tools/mirror_list.py and the tests run it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

type rendered struct {
	Source string                 `json:"source"`
	Hook   string                 `json:"hook"`
	Object map[string]interface{} `json:"object"`
}

// A document boundary in a rendered manifest: a line holding only "---".
var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

const sourcePrefix = "# Source: "

// split cuts a multi-document manifest into objects. Helm starts each template's output with a
// "# Source: <path>" comment; a template (or a CRD file) holding several documents names its path
// only on the first, so the ones after it inherit it.
func split(manifest, source, hook string) ([]rendered, error) {
	var out []rendered
	for _, doc := range separator.Split(manifest, -1) {
		trimmed := strings.TrimSpace(doc)
		if strings.HasPrefix(trimmed, sourcePrefix) {
			line, _, _ := strings.Cut(trimmed, "\n")
			source = strings.TrimSpace(strings.TrimPrefix(line, sourcePrefix))
		}
		var obj map[string]interface{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if len(obj) == 0 { // a template that rendered to nothing, or only comments
			continue
		}
		out = append(out, rendered{Source: source, Hook: hook, Object: obj})
	}
	return out, nil
}

func run() error {
	chartPath := flag.String("chart", "", "the chart: a .tgz or a directory")
	valuesPath := flag.String("values", "", "a JSON (or YAML) file of values; none: the chart's own")
	name := flag.String("name", "release-name", "the release name")
	namespace := flag.String("namespace", "default", "the release namespace")
	kubeVersion := flag.String("kube-version", "", "the Kubernetes version the chart sees (.Capabilities.KubeVersion)")
	apiVersions := flag.String("api-versions", "", "comma-separated API versions the chart sees besides Kubernetes' own "+
		"(.Capabilities.APIVersions), e.g. security.openshift.io/v1")
	flag.Parse()
	if *chartPath == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}

	chrt, err := loader.Load(*chartPath)
	if err != nil {
		return err
	}
	values := map[string]interface{}{}
	if *valuesPath != "" {
		data, err := os.ReadFile(*valuesPath)
		if err != nil {
			return err
		}
		if err := yaml.Unmarshal(data, &values); err != nil {
			return fmt.Errorf("%s: %w", *valuesPath, err)
		}
	}

	cfg := &action.Configuration{Log: func(string, ...interface{}) {}}
	install := action.NewInstall(cfg)
	// What `helm template` sets: no cluster is contacted, the release is not stored anywhere.
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.IncludeCRDs = true
	install.ReleaseName = *name
	install.Namespace = *namespace
	if *kubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(*kubeVersion)
		if err != nil {
			return err
		}
		install.KubeVersion = kv
	}
	if *apiVersions != "" {
		install.APIVersions = chartutil.VersionSet(strings.Split(*apiVersions, ","))
	}

	rel, err := install.Run(chrt, values)
	if err != nil {
		return err
	}
	out, err := split(rel.Manifest, "", "")
	if err != nil {
		return err
	}
	for _, h := range rel.Hooks {
		events := make([]string, len(h.Events))
		for i, e := range h.Events {
			events[i] = string(e)
		}
		objs, err := split(h.Manifest, h.Path, strings.Join(events, ","))
		if err != nil {
			return err
		}
		out = append(out, objs...)
	}
	if out == nil {
		out = []rendered{}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chart-render:", err)
		os.Exit(1)
	}
}
