// Command validate-objects strictly decodes Kubernetes objects into the
// upstream Go types they are generated from (k8s.io/api for batch/v1 Job
// and v1 Service, KubeRay's ray.io/v1 RayJob), the way kubectl and the API
// server's strict field validation do. Unknown fields, a string
// where an integer belongs (or the reverse) and malformed quantities are
// errors, as they are for the API server's strict field validation.
//
// Usage: validate-objects FILE...   (multi-document YAML; "-" for stdin)
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

func newObject(tm typeMeta) (interface{}, error) {
	switch tm.APIVersion + "/" + tm.Kind {
	case "batch/v1/Job":
		return &batchv1.Job{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "ray.io/v1/RayJob":
		return &rayv1.RayJob{}, nil
	}
	return nil, fmt.Errorf("no schema for apiVersion %q kind %q", tm.APIVersion, tm.Kind)
}

func validate(name string, data []byte) []string {
	var problems []string
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		where := fmt.Sprintf("%s: document %d", name, i+1)
		var tm typeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		obj, err := newObject(tm)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		// Convert as kubectl does (YAML to JSON without looking at the target
		// type, so `value: 1` stays a number), then decode strictly as the API
		// server does.
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			problems = append(problems, fmt.Sprintf("%s (%s): %v", where, tm.Kind, err))
			continue
		}
		// Round trip: what the typed object encodes back must hold every
		// field we wrote (catches values the types silently drop).
		back, err := yaml.Marshal(obj)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: re-encode: %v", where, err))
			continue
		}
		var want, got map[string]interface{}
		_ = yaml.Unmarshal(doc, &want)
		_ = yaml.Unmarshal(back, &got)
		for _, p := range missing("", want, got) {
			problems = append(problems, fmt.Sprintf("%s (%s): field %s is dropped by the type", where, tm.Kind, p))
		}
	}
	return problems
}

// missing lists paths present in want but absent from got.
func missing(prefix string, want, got map[string]interface{}) []string {
	var out []string
	for k, wv := range want {
		path := strings.TrimPrefix(prefix+"."+k, ".")
		gv, ok := got[k]
		if !ok {
			if !isZero(wv) { // omitempty drops zero values; that loses nothing
				out = append(out, path)
			}
			continue
		}
		wm, wok := wv.(map[string]interface{})
		gm, gok := gv.(map[string]interface{})
		if wok && gok {
			out = append(out, missing(path, wm, gm)...)
		}
		wl, wlok := wv.([]interface{})
		gl, glok := gv.([]interface{})
		if wlok && glok && len(wl) == len(gl) {
			for i := range wl {
				wim, a := wl[i].(map[string]interface{})
				gim, b := gl[i].(map[string]interface{})
				if a && b {
					out = append(out, missing(fmt.Sprintf("%s[%d]", path, i), wim, gim)...)
				}
			}
		}
	}
	return out
}

func isZero(v interface{}) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	case map[string]interface{}:
		return len(x) == 0
	case []interface{}:
		return len(x) == 0
	}
	return false
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: validate-objects FILE...")
		os.Exit(2)
	}
	var problems []string
	for _, name := range os.Args[1:] {
		var data []byte
		var err error
		if name == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(name)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		problems = append(problems, validate(name, data)...)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("validated %d files: 0 problems\n", len(os.Args)-1)
}
