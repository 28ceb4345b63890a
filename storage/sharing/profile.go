package sharing

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// Name is a shared table: the profile file and share.schema.table.
type Name struct {
	Profile string // path of the profile file
	Share   string
	Schema  string
	Table   string
}

// IsLocation reports whether location names a shared table:
// PROFILE.share#share.schema.table (no URL scheme before the profile).
func IsLocation(location string) bool {
	i := strings.LastIndexByte(location, '#')
	return i > 0 && strings.HasSuffix(location[:i], ".share") && !strings.Contains(location[:i], "://")
}

// ParseLocation splits PROFILE.share#share.schema.table. A share's name may
// hold '.', a schema's and a table's may not (PROTOCOL.md, Names), so the
// last two dots separate the levels.
func ParseLocation(location string) (Name, error) {
	i := strings.LastIndexByte(location, '#')
	if i <= 0 {
		return Name{}, fmt.Errorf("%s: want PROFILE.share#share.schema.table", location)
	}
	frag := location[i+1:]
	t := strings.LastIndexByte(frag, '.')
	if t <= 0 {
		return Name{}, fmt.Errorf("%s: want PROFILE.share#share.schema.table", location)
	}
	s := strings.LastIndexByte(frag[:t], '.')
	n := Name{Profile: location[:i], Share: frag[:max(s, 0)], Table: frag[t+1:]}
	if s > 0 {
		n.Schema = frag[s+1 : t]
	}
	for _, part := range []string{n.Share, n.Schema, n.Table} {
		if part == "" || len(part) > 255 || strings.ContainsFunc(part, func(r rune) bool { return r <= ' ' || r == '/' || r == 0x7f }) {
			return Name{}, fmt.Errorf("%s: want PROFILE.share#share.schema.table", location)
		}
	}
	return n, nil
}

// Profile is a profile file (PROTOCOL.md, Profile File Format).
type Profile struct {
	ShareCredentialsVersion int    `json:"shareCredentialsVersion"`
	Type                    string `json:"type"` // version 2: bearer_token, oauth_client_credentials, basic
	Endpoint                string `json:"endpoint"`
	BearerToken             string `json:"bearerToken"`
	ExpirationTime          string `json:"expirationTime"`

	// Type oauth_client_credentials: the token comes from TokenEndpoint
	// (OAuth 2.0 client credentials grant).
	TokenEndpoint string `json:"tokenEndpoint"`
	ClientID      string `json:"clientId"`
	ClientSecret  string `json:"clientSecret"`
	Scope         string `json:"scope"`
}

// typeOAuth is the profile type of the OAuth client credentials grant.
const typeOAuth = "oauth_client_credentials"

// String never shows the token.
func (p Profile) String() string { return "Delta Sharing profile for " + p.Endpoint }

// maxProfile bounds a profile file (a few hundred bytes in practice).
const maxProfile = 1 << 20

// LoadProfile reads and checks a profile file: a regular file of at most
// maxProfile bytes (a named pipe or a device is refused without blocking).
// Its errors quote what the file holds (a type, an endpoint) but never its
// token or client secret, whatever field they turn up in.
func LoadProfile(path string, now time.Time) (Profile, error) {
	p, err := loadProfile(path, now)
	if err != nil {
		var given Profile
		if b, rerr := storage.ReadConfig(path, maxProfile); rerr == nil && json.Unmarshal(b, &given) == nil {
			msg := err.Error()
			for _, s := range []string{given.BearerToken, given.ClientSecret} {
				if s != "" {
					msg = strings.ReplaceAll(msg, s, "***")
				}
			}
			return Profile{}, errors.New(msg)
		}
	}
	return p, err
}

func loadProfile(path string, now time.Time) (Profile, error) {
	b, err := storage.ReadConfig(path, maxProfile)
	if err != nil {
		return Profile{}, fmt.Errorf("profile %s: %w", path, err)
	}
	var p Profile
	if err := json.Unmarshal(b, &p); err != nil {
		// The decoder's message quotes no input, so no token leaks.
		return Profile{}, fmt.Errorf("profile %s: not a profile file: %v", path, err)
	}
	switch {
	case p.ShareCredentialsVersion == 1:
	case p.ShareCredentialsVersion == 2 && (p.Type == "" || p.Type == "bearer_token" || p.Type == typeOAuth):
	case p.ShareCredentialsVersion == 2:
		return Profile{}, fmt.Errorf("profile %s: profile type %s is not supported (only bearer_token and %s)", path, shortQuote(p.Type), typeOAuth)
	case p.ShareCredentialsVersion == 0:
		return Profile{}, fmt.Errorf("profile %s: no shareCredentialsVersion", path)
	default:
		return Profile{}, fmt.Errorf("profile %s: shareCredentialsVersion %d is newer than this deltafs reads (1 and 2): upgrade deltafs", path, p.ShareCredentialsVersion)
	}
	u, err := url.Parse(p.Endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Profile{}, fmt.Errorf("profile %s: endpoint %q is not an http(s) URL", path, p.Endpoint)
	}
	p.Endpoint = strings.TrimRight(p.Endpoint, "/")
	if p.Type == typeOAuth {
		if err := checkOAuth(p, u, path); err != nil {
			return Profile{}, err
		}
		return p, nil
	}
	if p.BearerToken == "" {
		return Profile{}, fmt.Errorf("profile %s: no bearerToken", path)
	}
	if p.ExpirationTime != "" {
		exp, err := time.Parse(time.RFC3339Nano, p.ExpirationTime)
		if err != nil {
			return Profile{}, fmt.Errorf("profile %s: expirationTime %q is not an ISO 8601 time", path, p.ExpirationTime)
		}
		if !exp.After(now) {
			return Profile{}, fmt.Errorf("profile %s: the bearer token expired at %s: ask the provider for a new profile", path, exp.UTC().Format(time.RFC3339))
		}
	}
	return p, nil
}

// checkOAuth checks an oauth_client_credentials profile whose endpoint is
// u: a token endpoint that is an http(s) URL, https when the sharing
// endpoint is (the client's secret never travels in clear where the data
// does not), and a client id and secret.
func checkOAuth(p Profile, endpoint *url.URL, path string) error {
	t, err := url.Parse(p.TokenEndpoint)
	switch {
	case p.TokenEndpoint == "":
		return fmt.Errorf("profile %s: no tokenEndpoint", path)
	case err != nil || (t.Scheme != "https" && t.Scheme != "http") || t.Host == "" || t.User != nil:
		return fmt.Errorf("profile %s: tokenEndpoint %s is not an http(s) URL", path, shortQuote(p.TokenEndpoint))
	case endpoint.Scheme == "https" && t.Scheme != "https":
		return fmt.Errorf("profile %s: tokenEndpoint %s is not https while the endpoint is: the client secret would travel in clear", path, shortQuote(p.TokenEndpoint))
	case p.ClientID == "":
		return fmt.Errorf("profile %s: no clientId", path)
	case p.ClientSecret == "":
		return fmt.Errorf("profile %s: no clientSecret", path)
	}
	return nil
}
