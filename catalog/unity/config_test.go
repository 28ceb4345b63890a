package unity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/storage"
)

func cleanEnv(t *testing.T) string {
	cfg := filepath.Join(t.TempDir(), "databrickscfg")
	t.Setenv("DATABRICKS_CONFIG_FILE", cfg)
	for _, v := range []string{"UC_ENDPOINT", "UC_TOKEN", "DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_CONFIG_PROFILE"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	return cfg
}

func TestResolveConfig(t *testing.T) {
	cfg := cleanEnv(t)
	if err := os.WriteFile(cfg, []byte("[DEFAULT]\nhost = https://default.example\ntoken = dapi-default\n\n[ml]\nhost = ml.example\ntoken = dapi-ml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(opts storage.CatalogOptions, endpoint, token, source string) {
		t.Helper()
		c, err := ResolveConfig(opts)
		if err != nil || c.Endpoint != endpoint || c.Token != token || c.Source != source {
			t.Fatalf("got %q %q %q %v, want %q %q %q", c.Endpoint, c.Token, c.Source, err, endpoint, token, source)
		}
	}
	check(storage.CatalogOptions{}, "https://default.example", "dapi-default", "profile DEFAULT of "+cfg)
	check(storage.CatalogOptions{Profile: "ml"}, "https://ml.example", "dapi-ml", "profile ml of "+cfg)
	t.Setenv("DATABRICKS_CONFIG_PROFILE", "ml")
	check(storage.CatalogOptions{}, "https://ml.example", "dapi-ml", "profile ml of "+cfg)
	t.Setenv("DATABRICKS_HOST", "https://dbx.example")
	t.Setenv("DATABRICKS_TOKEN", "dapi-env")
	check(storage.CatalogOptions{}, "https://dbx.example", "dapi-env", "DATABRICKS_TOKEN")
	t.Setenv("UC_ENDPOINT", "http://127.0.0.1:8080")
	t.Setenv("UC_TOKEN", "uc-env")
	check(storage.CatalogOptions{}, "http://127.0.0.1:8080", "uc-env", "UC_TOKEN")
	check(storage.CatalogOptions{Profile: "ml"}, "https://ml.example", "dapi-ml", "profile ml of "+cfg)
	check(storage.CatalogOptions{Endpoint: "http://flag:1", Token: "flag-tok"}, "http://flag:1", "flag-tok", "--uc-token")

	if _, err := ResolveConfig(storage.CatalogOptions{Profile: "nope"}); err == nil || !strings.Contains(err.Error(), "no profile nope") {
		t.Fatalf("missing profile: %v", err)
	}
	if c := (Config{Endpoint: "http://h:1/"}); c.BaseURL() != "http://h:1/api/2.1/unity-catalog" {
		t.Fatal(c.BaseURL())
	}
	if c := (Config{Endpoint: "http://h:1/api/2.1/unity-catalog"}); c.BaseURL() != "http://h:1/api/2.1/unity-catalog" {
		t.Fatal(c.BaseURL())
	}
}

func TestResolveConfigMissing(t *testing.T) {
	cleanEnv(t)
	_, err := ResolveConfig(storage.CatalogOptions{})
	if err == nil || !strings.Contains(err.Error(), "--uc-endpoint") {
		t.Fatalf("no endpoint: %v", err)
	}
	_, err = ResolveConfig(storage.CatalogOptions{Endpoint: "http://h"})
	if err == nil || !strings.Contains(err.Error(), "--uc-token") {
		t.Fatalf("no token: %v", err)
	}
	_, err = ResolveConfig(storage.CatalogOptions{Endpoint: "http://u:secret-pw@h", Token: "x"})
	if err == nil || strings.Contains(err.Error(), "secret-pw") {
		t.Fatalf("credentials in the endpoint: %v", err)
	}
}

func TestParseName(t *testing.T) {
	if n, err := ParseName("uc://main.default.t"); err != nil || n != "main.default.t" {
		t.Fatal(n, err)
	}
	for _, bad := range []string{"uc://main.t", "uc://a.b.c.d", "uc://a..c", "uc://a.b.c/x", "uc://a.b.c?x"} {
		if _, err := ParseName(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
