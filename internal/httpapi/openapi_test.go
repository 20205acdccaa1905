package httpapi

import (
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/hutchdev/hutch/api"
)

// TestRoutesMatchOpenAPI holds the server's route table and
// api/openapi.yaml to each other: a route missing from either fails.
func TestRoutesMatchOpenAPI(t *testing.T) {
	b, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
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

// TestSchemasMatchWireTypes holds each schema's properties to the JSON
// names of the api type it describes.
func TestSchemasMatchWireTypes(t *testing.T) {
	b, err := os.ReadFile("../../api/openapi.yaml")
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
		"Limits": api.Limits{}, "CreateSandboxRequest": api.CreateSandboxRequest{}, "Sandbox": api.Sandbox{},
		"SandboxList": api.SandboxList{}, "ExecRequest": api.ExecRequest{}, "ExecResult": api.ExecResult{},
		"ExecEvent": api.ExecEvent{}, "FileInfo": api.FileInfo{}, "FileList": api.FileList{},
		"MkdirRequest": api.MkdirRequest{}, "MoveRequest": api.MoveRequest{}, "TarResult": api.TarResult{},
		"CreateKeyRequest": api.CreateKeyRequest{}, "Key": api.Key{}, "KeyList": api.KeyList{},
		"CreateTenantRequest": api.CreateTenantRequest{}, "Tenant": api.Tenant{}, "Info": api.Info{},
		"InfoLimits": api.InfoLimits{}, "Error": api.Error{}, "Event": api.Event{}, "EventList": api.EventList{},
		"ProcessRequest": api.ProcessRequest{}, "TermSize": api.TermSize{}, "Process": api.Process{}, "ProcessList": api.ProcessList{},
		"OutputEvent": api.OutputEvent{}, "NetworkPolicy": api.NetworkPolicy{}, "Network": api.Network{}, "SignalRequest": api.SignalRequest{}, "TerminalMessage": api.TerminalMessage{},
		"PortRequest": api.PortRequest{}, "Port": api.Port{}, "PortList": api.PortList{},
		"PreviewURLRequest": api.PreviewURLRequest{}, "PreviewURL": api.PreviewURL{},
		"CreateSecretRequest": api.CreateSecretRequest{}, "ReplaceSecretRequest": api.ReplaceSecretRequest{},
		"Secret": api.Secret{}, "SecretList": api.SecretList{},
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
