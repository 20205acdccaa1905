package config

import (
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"

	// The stores and a driver Validate looks up.
	_ "github.com/hutchdev/hutch/internal/runtime/driver/process"
	_ "github.com/hutchdev/hutch/internal/store/postgres"
	_ "github.com/hutchdev/hutch/internal/store/sqlite"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadPrecedence(t *testing.T) {
	c, err := Load([]string{"--listen", "127.0.0.1:9999"}, env(map[string]string{
		"HUTCH_LISTEN": "127.0.0.1:8888", "HUTCH_DATA": "/tmp/x", "HUTCH_DEFAULT_TIMEOUT": "5m",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9999" {
		t.Errorf("flag should win over env: listen = %q", c.Listen)
	}
	if c.DataDir != "/tmp/x" || c.DefaultTimeout != 5*time.Minute {
		t.Errorf("env not applied: data %q timeout %s", c.DataDir, c.DefaultTimeout)
	}
	if d := Default(); d.Listen != "127.0.0.1:7070" || d.DataDir != "./hutch-data" {
		t.Errorf("defaults changed: %+v", d)
	}
}

func TestPreviewURL(t *testing.T) {
	c, err := Load([]string{"--preview-domain", "preview.example.com", "--preview-url", "https://preview.example.com:8443"}, env(nil))
	if err != nil || c.PreviewURL != "https://preview.example.com:8443" {
		t.Fatalf("Load = %+v, %v", c.PreviewURL, err)
	}
}

func TestLoadRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"bad listen":                  {args: []string{"--listen", "nope"}, want: "listen"},
		"bad metrics listen":          {args: []string{"--metrics-listen", "9090"}, want: "metrics listen"},
		"bad driver":                  {args: []string{"--driver", "vmware"}, want: "driver"},
		"unknown drivers":             {args: []string{"--drivers", "vmware"}, want: `drivers: "vmware"`},
		"unknown store":               {args: []string{"--store", "oracle"}, want: `store "oracle": this build has postgres, sqlite`},
		"unknown store from env":      {env: map[string]string{"HUTCH_STORE": "mysql"}, want: `store "mysql"`},
		"bad env duration":            {env: map[string]string{"HUTCH_DEFAULT_TIMEOUT": "soon"}, want: "HUTCH_DEFAULT_TIMEOUT"},
		"timeout over max":            {args: []string{"--default-timeout", "48h"}, want: "default timeout"},
		"negative file max":           {args: []string{"--max-file-bytes", "-1"}, want: "max file bytes"},
		"stray argument":              {args: []string{"extra"}, want: "unexpected"},
		"advertise not a URL":         {args: []string{"--advertise", "10.0.0.1:7070"}, want: "advertise"},
		"advertise with a path":       {args: []string{"--advertise", "http://10.0.0.1:7070/api"}, want: "advertise"},
		"node label without =":        {args: []string{"--node-label", "zone"}, want: "node label"},
		"env node label without =":    {env: map[string]string{"HUTCH_NODE_LABELS": "zone=a,gpu"}, want: "node label"},
		"preview URL of another host": {args: []string{"--preview-url", "https://example.com"}, want: "preview domain"},
		"preview URL with a path":     {args: []string{"--preview-url", "https://localhost/p"}, want: "a port at most"},
		"preview URL not http":        {args: []string{"--preview-url", "ftp://localhost"}, want: "http or https"},
		"event retention too short":   {args: []string{"--event-retention", "10m"}, want: "event retention"},
		"negative event max":          {env: map[string]string{"HUTCH_EVENT_MAX_PER_TENANT": "-1"}, want: "event max per tenant"},
		"negative tenant quota":       {args: []string{"--tenant-memory-mb", "-1"}, want: "tenant quotas"},
		"NaN cpu quota":               {env: map[string]string{"HUTCH_TENANT_CPU": "NaN"}, want: "tenant quotas"},
		"negative reserve":            {args: []string{"--reserve-pids", "-5"}, want: "reserves"},
		"freeze past teardown":        {args: []string{"--freeze-timeout", "1m"}, want: "freeze timeout"},
		"no freeze timeout":           {env: map[string]string{"HUTCH_FREEZE_TIMEOUT": "0s"}, want: "freeze timeout"},
		"negative overcommit":         {args: []string{"--max-memory-overcommit", "-1"}, want: "max memory overcommit"},
		"bad overcommit env":          {env: map[string]string{"HUTCH_MAX_CPU_OVERCOMMIT": "lots"}, want: "HUTCH_MAX_CPU_OVERCOMMIT"},
		"bad log format":              {args: []string{"--log-format", "xml"}, want: "log format"},
		"bad apps domain":             {args: []string{"--apps-domain", "a..b"}, want: "apps domain"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(tc.args, env(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want mention of %q", err, tc.want)
			}
		})
	}
}

// TestStore: the store defaults to sqlite, the environment names another,
// and the flag help lists the registered stores with their summaries.
func TestStore(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil || c.Store != "sqlite" {
		t.Fatalf("Load = %q, %v; want the sqlite store", c.Store, err)
	}
	if _, err := Load(nil, env(map[string]string{"HUTCH_STORE": "sqlite"})); err != nil {
		t.Fatalf("HUTCH_STORE=sqlite: %v", err)
	}
	if u := storeUsage(); !strings.Contains(u, "sqlite (one SQLite file") {
		t.Errorf("--store help %q does not list sqlite", u)
	}
}

// TestEventRetention: the event log is trimmed by default, the
// environment and flags change how, and 0 keeps everything.
func TestEventRetention(t *testing.T) {
	d := Default()
	if d.EventRetention != 720*time.Hour || d.EventMaxPerTenant != 100000 {
		t.Errorf("defaults: retention %s, max per tenant %d; want 720h and 100000", d.EventRetention, d.EventMaxPerTenant)
	}
	c, err := Load([]string{"--event-max-per-tenant", "500"}, env(map[string]string{"HUTCH_EVENT_RETENTION": "48h", "HUTCH_EVENT_MAX_PER_TENANT": "7"}))
	if err != nil || c.EventRetention != 48*time.Hour || c.EventMaxPerTenant != 500 {
		t.Fatalf("Load = %s, %d, %v; want 48h from the environment and 500 from the flag", c.EventRetention, c.EventMaxPerTenant, err)
	}
	c, err = Load([]string{"--event-retention", "0", "--event-max-per-tenant", "0"}, env(nil))
	if err != nil || c.EventRetention != 0 || c.EventMaxPerTenant != 0 {
		t.Fatalf("Load of 0 and 0 = %s, %d, %v; want both kept for ever", c.EventRetention, c.EventMaxPerTenant, err)
	}
}

func TestAdmissionFlags(t *testing.T) {
	d := Default()
	defaults := api.QuotaLimits{Sandboxes: 100, DiskMB: 51200, Snapshots: 200, SnapshotsMB: 20480, Volumes: 50, VolumesMB: 20480,
		Templates: 50, TemplatesMB: 20480, Apps: 20, Keys: 100, Secrets: 1000, Watches: 64, Streams: 256}
	if d.TenantQuotas != defaults || d.ReserveMemoryMB != 1024 || d.ReservePids != 4096 ||
		d.MaxMemoryOvercommit != 128 || d.MaxPidsOvercommit != 8 || d.MaxCPUOvercommit != 0 {
		t.Errorf("defaults: %+v", d)
	}
	c, err := Load([]string{"--tenant-cpu", "2.5", "--max-memory-overcommit", "0", "--max-cpu-overcommit", "4", "--reserve-memory-mb", "2048",
		"--tenant-max-snapshots", "3", "--tenant-snapshots-mb", "0", "--tenant-max-streams", "8"},
		env(map[string]string{"HUTCH_TENANT_MAX_SANDBOXES": "0", "HUTCH_TENANT_MEMORY_MB": "8192", "HUTCH_TENANT_CPU": "9", "HUTCH_MAX_PIDS_OVERCOMMIT": "0.5",
			"HUTCH_TENANT_MAX_KEYS": "7", "HUTCH_TENANT_DISK_MB": "1024"}))
	if err != nil {
		t.Fatal(err)
	}
	want := defaults
	want.Sandboxes, want.MemoryMB, want.CPU, want.Snapshots, want.SnapshotsMB, want.Streams, want.Keys, want.DiskMB = 0, 8192, 2.5, 3, 0, 8, 7, 1024
	if c.TenantQuotas != want {
		t.Errorf("tenant quotas %+v, want %+v", c.TenantQuotas, want)
	}
	if c.MaxMemoryOvercommit != 0 || c.MaxPidsOvercommit != 0.5 || c.MaxCPUOvercommit != 4 || c.ReserveMemoryMB != 2048 {
		t.Errorf("host bounds: %+v", c)
	}
	if _, err := Load([]string{"--tenant-max-watches", "-1"}, env(nil)); err == nil {
		t.Error("a negative quota was taken")
	}
}

// TestStoreURL: a store that runs as a server needs --store-url (or
// $HUTCH_STORE_URL, under the flag), one that keeps a file takes none,
// and the URL is shown only with its password redacted, the flag help
// included.
func TestStoreURL(t *testing.T) {
	const pgURL = "postgres://hutch:s3cret@db:5432/hutch"
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want string // in the error; "" for none
		url  string
	}{
		"postgres without a URL": {args: []string{"--store", "postgres"}, want: "store postgres needs its database's URL: --store-url or $HUTCH_STORE_URL"},
		"postgres, URL by flag":  {args: []string{"--store", "postgres", "--store-url", pgURL}, url: pgURL},
		"postgres, URL by env":   {env: map[string]string{"HUTCH_STORE": "postgres", "HUTCH_STORE_URL": pgURL}, url: pgURL},
		"the flag over the env":  {args: []string{"--store-url", "postgres:///flag"}, env: map[string]string{"HUTCH_STORE": "postgres", "HUTCH_STORE_URL": pgURL}, url: "postgres:///flag"},
		"sqlite with a URL":      {args: []string{"--store-url", pgURL}, want: "store sqlite keeps its state in the data directory and takes no --store-url"},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Load(tc.args, env(tc.env))
			switch {
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want mention of %q", err, tc.want)
			case tc.want == "" && (err != nil || c.StoreURL != tc.url):
				t.Fatalf("Load = %q, %v; want %q", c.StoreURL, err, tc.url)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}

	for in, want := range map[string]string{
		pgURL:                                     "postgres://hutch:xxxxx@db:5432/hutch",
		"postgres://db/hutch?password=s3cret":     "postgres://db/hutch?password=xxxxx",
		"postgresql://u@db/h?sslpassword=s3cret":  "postgresql://u@db/h?sslpassword=xxxxx",
		"host=db user=u password=s3cret dbname=h": "host=db user=u password=xxxxx dbname=h",
		"host=db password='s3 cret' dbname=h":     "host=db password=xxxxx dbname=h",
		"postgres://u:s3cret@db:bad port/h":       "xxxxx",
		"postgres:///hutch":                       "postgres:///hutch",
		"":                                        "",
	} {
		if got := (Config{StoreURL: in}).StoreURLRedacted(); got != want {
			t.Errorf("StoreURLRedacted(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDrivers: --drivers names the only drivers opened; one alone is the
// default when --driver is left to auto, and --driver must be among them.
func TestDrivers(t *testing.T) {
	c, err := Load([]string{"--drivers", "process"}, env(nil))
	if err != nil || c.Driver != "process" || strings.Join(c.Drivers, ",") != "process" {
		t.Errorf("--drivers process: driver %q, drivers %v, %v; want process alone, the default", c.Driver, c.Drivers, err)
	}
	c, err = Load(nil, env(map[string]string{"HUTCH_DRIVERS": " process , "}))
	if err != nil || strings.Join(c.Drivers, ",") != "process" {
		t.Errorf("$HUTCH_DRIVERS: %v, %v", c.Drivers, err)
	}
	if _, err := Load([]string{"--drivers", "process", "--driver", "vmware"}, env(nil)); err == nil || !strings.Contains(err.Error(), "not among --drivers") {
		t.Errorf("--driver outside --drivers: %v", err)
	}
}
