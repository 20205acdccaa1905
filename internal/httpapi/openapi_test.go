package httpapi

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// TestRoutesMatchOpenAPI holds the server's route table and
// api/openapi.yaml to each other: a route missing from either fails.
func TestRoutesMatchOpenAPI(t *testing.T) {
	b, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		OpenAPI string                               `yaml:"openapi"`
		Paths   map[string]map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(b, &spec); err != nil {
		t.Fatalf("parse openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(spec.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", spec.OpenAPI)
	}
	var inSpec []string
	for path, ops := range spec.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
				inSpec = append(inSpec, strings.ToUpper(method)+" "+path)
			}
		}
	}
	var inServer []string
	for _, r := range (&API{}).routes() {
		inServer = append(inServer, r.method+" "+r.pattern)
	}
	sort.Strings(inSpec)
	sort.Strings(inServer)
	if diff := cmp.Diff(inSpec, inServer); diff != "" {
		t.Fatalf("openapi.yaml (-) and the server's routes (+) disagree:\n%s", diff)
	}
}
