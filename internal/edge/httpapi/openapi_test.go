package httpapi

import (
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/hutchdev/hutch/api"
)

// TestRoutesMatchOpenAPI holds the server's route table and
// api/openapi.yaml to each other: a route missing from either fails, and
// so does a route whose query parameters differ from its operation's.
func TestRoutesMatchOpenAPI(t *testing.T) {
	b, err := os.ReadFile("../../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		OpenAPI    string                          `yaml:"openapi"`
		Paths      map[string]map[string]yaml.Node `yaml:"paths"`
		Components struct {
			Parameters map[string]specParam `yaml:"parameters"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(b, &spec); err != nil {
		t.Fatalf("parse openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(spec.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", spec.OpenAPI)
	}
	specQuery := map[string][]string{} // "METHOD /path" → its query parameters
	for path, item := range spec.Paths {
		var shared []specParam
		if n, ok := item["parameters"]; ok {
			if err := n.Decode(&shared); err != nil {
				t.Fatalf("%s parameters: %v", path, err)
			}
		}
		for method, n := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
			default:
				continue
			}
			key := strings.ToUpper(method) + " " + path
			var op struct {
				Parameters []specParam `yaml:"parameters"`
			}
			if err := n.Decode(&op); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			names := map[string]bool{}
			for _, p := range slices.Concat(shared, op.Parameters) {
				if ref, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
					if p, ok = spec.Components.Parameters[ref]; !ok {
						t.Fatalf("%s: no parameter component %q", key, ref)
					}
				}
				if p.In == "query" {
					names[p.Name] = true
				}
			}
			specQuery[key] = slices.Sorted(maps.Keys(names))
		}
	}
	serverQuery := map[string][]string{}
	for _, r := range (&API{}).routes() {
		serverQuery[r.method+" "+r.pattern] = slices.Sorted(slices.Values(r.query))
	}
	inSpec := slices.Sorted(maps.Keys(specQuery))
	inServer := slices.Sorted(maps.Keys(serverQuery))
	if diff := cmp.Diff(inSpec, inServer); diff != "" {
		t.Fatalf("openapi.yaml (-) and the server's routes (+) disagree:\n%s", diff)
	}
	for _, key := range inSpec {
		if diff := cmp.Diff(specQuery[key], serverQuery[key]); diff != "" {
			t.Errorf("%s: query parameters in openapi.yaml (-) and routes.go (+) disagree:\n%s", key, diff)
		}
	}
}

// specParam is an OpenAPI parameter, or a $ref to one in
// components/parameters.
type specParam struct {
	Ref  string `yaml:"$ref"`
	Name string `yaml:"name"`
	In   string `yaml:"in"`
}

// TestSchemasMatchWireTypes holds each schema's properties to the JSON
// names of the api type it describes.
func TestSchemasMatchWireTypes(t *testing.T) {
	b, err := os.ReadFile("../../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		"Limits": api.Limits{}, "CreateSandboxRequest": api.CreateSandboxRequest{}, "Sandbox": api.Sandbox{}, "Settings": api.Settings{}, "SettingsView": api.SettingsView{}, "KeepaliveRequest": api.KeepaliveRequest{},
		"SandboxMetrics": api.SandboxMetrics{}, "CPUStats": api.CPUStats{}, "MemStats": api.MemStats{},
		"PidStats": api.PidStats{}, "DiskStats": api.DiskStats{}, "NetStats": api.NetStats{}, "Sample": api.Sample{},
		"SandboxList": api.SandboxList{}, "ExecRequest": api.ExecRequest{}, "ExecResult": api.ExecResult{},
		"ExecEvent": api.ExecEvent{}, "FileInfo": api.FileInfo{}, "FileList": api.FileList{},
		"MkdirRequest": api.MkdirRequest{}, "MoveRequest": api.MoveRequest{}, "TarResult": api.TarResult{},
		"CreateKeyRequest": api.CreateKeyRequest{}, "Key": api.Key{}, "KeyList": api.KeyList{},
		"CreateTenantRequest": api.CreateTenantRequest{}, "Tenant": api.Tenant{}, "TenantDeletion": api.TenantDeletion{}, "TenantRemoved": api.TenantRemoved{}, "Info": api.Info{},
		"InfoLimits": api.InfoLimits{}, "Error": api.Error{}, "Event": api.Event{}, "EventList": api.EventList{},
		"ProcessRequest": api.ProcessRequest{}, "TermSize": api.TermSize{}, "Process": api.Process{}, "ProcessList": api.ProcessList{},
		"OutputEvent": api.OutputEvent{}, "NetworkPolicy": api.NetworkPolicy{}, "Network": api.Network{}, "SignalRequest": api.SignalRequest{}, "TerminalMessage": api.TerminalMessage{},
		"PortRequest": api.PortRequest{}, "Port": api.Port{}, "PortList": api.PortList{},
		"PreviewURLRequest": api.PreviewURLRequest{}, "PreviewURL": api.PreviewURL{},
		"CreateSecretRequest": api.CreateSecretRequest{}, "ReplaceSecretRequest": api.ReplaceSecretRequest{},
		"Secret": api.Secret{}, "SecretList": api.SecretList{},
		"Node": api.Node{}, "NodeList": api.NodeList{}, "DrainNodeRequest": api.DrainNodeRequest{},
		"Quotas": api.Quotas{}, "QuotaLimits": api.QuotaLimits{}, "QuotaUsage": api.QuotaUsage{}, "TenantQuotas": api.TenantQuotas{},
	} {
		s, ok := spec.Components.Schemas[name]
		if !ok {
			t.Errorf("schema %s is missing", name)
			continue
		}
		var inSpec, inGo []string
		for p := range s.Properties {
			inSpec = append(inSpec, p)
		}
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			if tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
				inGo = append(inGo, tag)
			}
		}
		sort.Strings(inSpec)
		sort.Strings(inGo)
		if diff := cmp.Diff(inSpec, inGo); diff != "" {
			t.Errorf("schema %s (-) and api.%s (+) disagree:\n%s", name, rt.Name(), diff)
		}
	}
}

// TestOpenAPIContract: what a generator and a reader of the spec rely on
// beside the routes: a license, every operation tagged with a declared
// (and described) tag, an operationId each, and the WebSocket operations
// answering 101.
func TestOpenAPIContract(t *testing.T) {
	b, err := os.ReadFile("../../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Info struct {
			License struct {
				Name       string `yaml:"name"`
				Identifier string `yaml:"identifier"`
			} `yaml:"license"`
		} `yaml:"info"`
		Tags []struct {
			Name        string `yaml:"name"`
			Description string `yaml:"description"`
		} `yaml:"tags"`
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Info.License.Name == "" || spec.Info.License.Identifier == "" {
		t.Errorf("info.license = %+v: want a name and an SPDX identifier", spec.Info.License)
	}
	declared := map[string]bool{}
	for _, tag := range spec.Tags {
		declared[tag.Name] = true
		if tag.Description == "" {
			t.Errorf("tag %s has no description", tag.Name)
		}
	}
	ids := map[string]string{}
	for path, item := range spec.Paths {
		for method, n := range item {
			switch method {
			case "get", "put", "post", "delete", "patch":
			default:
				continue
			}
			var op struct {
				OperationID string               `yaml:"operationId"`
				Tags        []string             `yaml:"tags"`
				Responses   map[string]yaml.Node `yaml:"responses"`
			}
			if err := n.Decode(&op); err != nil {
				t.Fatal(err)
			}
			key := strings.ToUpper(method) + " " + path
			if len(op.Tags) == 0 {
				t.Errorf("%s has no tag", key)
			}
			for _, tag := range op.Tags {
				if !declared[tag] {
					t.Errorf("%s: tag %s is not declared", key, tag)
				}
			}
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", key)
			} else if other, dup := ids[op.OperationID]; dup {
				t.Errorf("%s and %s share operationId %s", key, other, op.OperationID)
			}
			ids[op.OperationID] = key
			if strings.HasSuffix(path, "/terminal") {
				if _, ok := op.Responses["101"]; !ok {
					t.Errorf("%s is a WebSocket: want its 101 described", key)
				}
			}
		}
	}
}
