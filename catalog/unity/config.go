package unity

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/ini.v1"

	"github.com/deltafs/deltafs/storage"
)

// Config is how to reach a catalog: its server and a bearer token.
type Config struct {
	Endpoint string // https://host[:port], or the API base ending in /api/2.1/unity-catalog
	Token    string // never printed
	// Source says where the token came from, for messages ("--uc-token",
	// "UC_TOKEN", "profile DEFAULT of ~/.databrickscfg").
	Source string
}

// APIPath is the REST prefix of Unity Catalog, on Databricks and OSS alike.
const APIPath = "/api/2.1/unity-catalog"

// BaseURL is the URL the API paths hang from.
func (c Config) BaseURL() string {
	e := strings.TrimRight(c.Endpoint, "/")
	if strings.HasSuffix(e, APIPath) {
		return e
	}
	return e + APIPath
}

// ResolveConfig finds the endpoint and token, first found wins for each:
//
//  1. the flags (--uc-endpoint, --uc-token);
//  2. the profile named by --uc-profile, when given;
//  3. UC_ENDPOINT and UC_TOKEN (Unity Catalog OSS);
//  4. DATABRICKS_HOST and DATABRICKS_TOKEN (the Databricks tools' variables);
//  5. the profile DATABRICKS_CONFIG_PROFILE (else DEFAULT) of the
//     configuration file DATABRICKS_CONFIG_FILE (else ~/.databrickscfg),
//     keys host and token, as the Databricks CLI and SDKs write it.
//
// No token is an error: Unity Catalog OSS without authentication takes
// any token, so pass --uc-token anything.
func ResolveConfig(opts storage.CatalogOptions) (Config, error) {
	var c Config
	take := func(endpoint, token, source string) {
		if c.Endpoint == "" {
			c.Endpoint = endpoint
		}
		if c.Token == "" && token != "" {
			c.Token, c.Source = token, source
		}
	}
	take(opts.Endpoint, opts.Token, "--uc-token")
	if opts.Profile != "" {
		h, tok, file, err := profile(opts.Profile, true)
		if err != nil {
			return c, err
		}
		take(h, tok, "profile "+opts.Profile+" of "+file)
	}
	take(os.Getenv("UC_ENDPOINT"), os.Getenv("UC_TOKEN"), "UC_TOKEN")
	take(os.Getenv("DATABRICKS_HOST"), os.Getenv("DATABRICKS_TOKEN"), "DATABRICKS_TOKEN")
	if c.Endpoint == "" || c.Token == "" {
		name := os.Getenv("DATABRICKS_CONFIG_PROFILE")
		h, tok, file, err := profile(name, name != "")
		if err != nil {
			return c, err
		}
		take(h, tok, "profile "+orDefault(name)+" of "+file)
	}
	switch {
	case c.Endpoint == "":
		return c, errors.New("no Unity Catalog endpoint: pass --uc-endpoint, set UC_ENDPOINT or DATABRICKS_HOST, or a host in ~/.databrickscfg")
	case c.Token == "":
		return c, errors.New("no Unity Catalog token: pass --uc-token, set UC_TOKEN or DATABRICKS_TOKEN, or a token in ~/.databrickscfg")
	}
	if !strings.Contains(c.Endpoint, "://") {
		c.Endpoint = "https://" + c.Endpoint // Databricks hosts are often given bare
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return c, errors.New("the Unity Catalog endpoint must be an http(s)://host[:port] URL without credentials")
	}
	return c, nil
}

func orDefault(name string) string {
	if name == "" {
		return "DEFAULT"
	}
	return name
}

// maxConfigFile bounds ~/.databrickscfg (a few profiles in practice).
const maxConfigFile = 1 << 20

// profile reads host and token of one profile. A missing file or profile
// is no error unless the profile was asked for by name.
func profile(name string, required bool) (host, token, file string, err error) {
	file = os.Getenv("DATABRICKS_CONFIG_FILE")
	if file == "" {
		home, herr := os.UserHomeDir()
		if herr != nil {
			if required {
				return "", "", "~/.databrickscfg", fmt.Errorf("profile %s: no home directory: %v", name, herr)
			}
			return "", "", "", nil
		}
		file = filepath.Join(home, ".databrickscfg")
	}
	data, rerr := storage.ReadConfig(file, maxConfigFile)
	if rerr != nil {
		if required || !errors.Is(rerr, os.ErrNotExist) {
			return "", "", file, fmt.Errorf("profile %s: %s: %v", orDefault(name), file, rerr)
		}
		return "", "", file, nil
	}
	f, perr := ini.Load(data)
	if perr != nil {
		return "", "", file, fmt.Errorf("%s: not a valid configuration file: %v", file, perr)
	}
	sec, serr := f.GetSection(orDefault(name))
	if serr != nil {
		if required {
			return "", "", file, fmt.Errorf("%s has no profile %s", file, name)
		}
		return "", "", file, nil
	}
	return sec.Key("host").String(), sec.Key("token").String(), file, nil
}
