package azstore

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Location is a parsed table location.
type Location struct {
	Scheme    string // abfss, abfs, az, wasbs, wasb
	Container string
	Account   string // "" when the location does not name it (az://container/path)
	Host      string // the location's host (account.dfs.core.windows.net), or ""
	Prefix    string // key prefix of the table: "" or ending in '/'
}

// String is the location as the user gave it, normalised: no trailing
// slash, never credentials.
func (l Location) String() string {
	s := l.Scheme + "://" + l.Container
	if l.Host != "" {
		s += "@" + l.Host
	}
	if l.Prefix != "" {
		s += "/" + strings.TrimSuffix(l.Prefix, "/")
	}
	return s
}

// blobServiceURL is the Blob endpoint the location's host names
// (account.dfs.SUFFIX and account.blob.SUFFIX both give
// scheme://account.blob.SUFFIX, so that sovereign clouds work as pasted),
// or "" when the location names no host.
func (l Location) blobServiceURL() string {
	if l.Host == "" {
		return ""
	}
	scheme := "https"
	if l.Scheme == "abfs" || l.Scheme == "wasb" {
		scheme = "http"
	}
	_, suffix, _ := strings.Cut(l.Host, ".")
	if rest, ok := strings.CutPrefix(suffix, "dfs."); ok {
		suffix = "blob." + rest
	}
	return scheme + "://" + l.Account + "." + suffix
}

// Schemes are the URL schemes the backend registers.
var Schemes = []string{"abfss", "abfs", "az", "wasbs", "wasb"}

// ParseLocation parses
//
//	abfss://container@account.dfs.core.windows.net/path   (abfs: plain http)
//	wasbs://container@account.blob.core.windows.net/path  (wasb: plain http)
//	az://container/path, abfss://container/path           (account from the environment)
//
// Locations with a password, a port on the account host, a query or a
// fragment are refused (a SAS token belongs in AZURE_STORAGE_SAS_TOKEN);
// no error repeats a query or a password.
func ParseLocation(location string) (Location, error) {
	scheme, _, _ := strings.Cut(location, "://")
	known := false
	for _, s := range Schemes {
		known = known || s == scheme
	}
	if !known {
		return Location{}, fmt.Errorf("%s: not an Azure location (abfss://, az://, wasbs://)", location)
	}
	u, err := url.Parse(location)
	if err != nil {
		return Location{}, fmt.Errorf("%s location: not a valid URL", scheme)
	}
	if _, hasPass := u.User.Password(); hasPass {
		return Location{}, fmt.Errorf("%s location must not contain credentials; use AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN or an Azure identity", scheme)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return Location{}, fmt.Errorf("%s location has a query or fragment; a SAS token belongs in AZURE_STORAGE_SAS_TOKEN, never in the location", scheme)
	}
	l := Location{Scheme: scheme}
	if u.User != nil {
		l.Container = u.User.Username()
		l.Host = u.Host
		if u.Port() != "" || !strings.Contains(u.Host, ".") {
			return Location{}, fmt.Errorf("%s: expected %s://container@account.%s.core.windows.net/path", location, scheme, hostKind(scheme))
		}
		l.Account, _, _ = strings.Cut(u.Host, ".")
	} else {
		l.Container = u.Host
		if u.Port() != "" {
			return Location{}, fmt.Errorf("%s: expected %s://container/path", location, scheme)
		}
	}
	if l.Container == "" {
		return Location{}, fmt.Errorf("%s: no container", location)
	}
	if err := checkContainerName(l.Container); err != nil {
		return Location{}, fmt.Errorf("%s: %w", location, err)
	}
	l.Prefix = strings.Trim(u.Path, "/")
	if l.Prefix != "" {
		l.Prefix += "/"
	}
	return l, nil
}

func hostKind(scheme string) string {
	if strings.HasPrefix(scheme, "wasb") {
		return "blob"
	}
	return "dfs"
}

// checkContainerName applies Azure's rule (3 to 63 lowercase letters,
// digits and single hyphens, starting and ending alphanumeric; "$root"
// and "$web" are special), so that a mistyped name fails here in words
// rather than as the service's InvalidResourceName.
func checkContainerName(c string) error {
	if c == "$root" || c == "$web" || c == "$logs" {
		return nil
	}
	bad := len(c) < 3 || len(c) > 63 || c[0] == '-' || c[len(c)-1] == '-' || strings.Contains(c, "--")
	for _, r := range c {
		bad = bad || !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	}
	if bad {
		return fmt.Errorf("invalid container name %q (3 to 63 lowercase letters, digits and hyphens)", c)
	}
	return nil
}

// connString is what deltafs takes from an Azure Storage connection
// string (AZURE_STORAGE_CONNECTION_STRING), the format Azure's portal and
// CLI print: Key=Value pairs separated by ';'. The SDK's own parser is
// internal to it, and the endpoint, account and credentials must be
// combined with the location and the flags here.
type connString struct {
	account, key, sas, blobEndpoint string
}

// The storage emulator's (Azurite's) well-known development account,
// published in Azurite's and Azure's documentation (not a secret), which
// UseDevelopmentStorage=true stands for.
const (
	DevAccount  = "devstoreaccount1"
	DevKey      = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	devEndpoint = "http://127.0.0.1:10000/" + DevAccount
)

func parseConnString(s string) (connString, error) {
	fields := map[string]string{}
	for _, part := range strings.Split(strings.TrimSpace(s), ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			// Never echo the part: it may be a key.
			return connString{}, errors.New("AZURE_STORAGE_CONNECTION_STRING: not a connection string (want Key=Value pairs separated by ';')")
		}
		fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	if strings.EqualFold(fields["usedevelopmentstorage"], "true") {
		return connString{account: DevAccount, key: DevKey, blobEndpoint: devEndpoint}, nil
	}
	c := connString{account: fields["accountname"], key: fields["accountkey"], sas: strings.TrimPrefix(fields["sharedaccesssignature"], "?"), blobEndpoint: fields["blobendpoint"]}
	if c.blobEndpoint == "" && c.account != "" {
		proto := fields["defaultendpointsprotocol"]
		if proto == "" {
			proto = "https"
		}
		suffix := fields["endpointsuffix"]
		if suffix == "" {
			suffix = "core.windows.net"
		}
		c.blobEndpoint = proto + "://" + c.account + ".blob." + suffix
	}
	if c.blobEndpoint == "" {
		return connString{}, errors.New("AZURE_STORAGE_CONNECTION_STRING names neither AccountName nor BlobEndpoint")
	}
	if c.key == "" && c.sas == "" {
		return connString{}, errors.New("AZURE_STORAGE_CONNECTION_STRING has neither AccountKey nor SharedAccessSignature")
	}
	if c.key != "" && c.account == "" {
		return connString{}, errors.New("AZURE_STORAGE_CONNECTION_STRING has an AccountKey but no AccountName")
	}
	return c, nil
}

// firstEnv is the first non-empty variable of names.
func firstEnv(names ...string) (name, value string) {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return n, v
		}
	}
	return "", ""
}
