package azstore

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/deltafs/deltafs/internal/secret"
)

// storageScope is the OAuth scope of Azure Storage in every cloud.
const storageScope = "https://storage.azure.com/.default"

// connect resolves the account, endpoint and credentials (the chain in the
// package documentation) and builds the container client.
func (s *Store) connect(ctx context.Context) error {
	vended := s.opts.Credentials != nil
	var cs *connString
	if v := os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); v != "" && !s.opts.AzureOptions.Anonymous && !vended {
		c, err := parseConnString(v)
		if err != nil {
			return &Error{Location: s.loc, Reason: err.Error(), Wide: true, Permanent: true}
		}
		cs = &c
		secret.Add(c.key, c.sas)
	}
	s.account = s.where.Account
	if s.account == "" {
		_, s.account = firstEnv("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT")
	}
	if s.account == "" && cs != nil {
		s.account = cs.account
	}
	if cs != nil && cs.account != "" && s.account != "" && !strings.EqualFold(cs.account, s.account) {
		return &Error{Location: s.loc, Wide: true, Permanent: true,
			Reason: fmt.Sprintf("AZURE_STORAGE_CONNECTION_STRING is for account %s, the location names account %s", cs.account, s.account)}
	}

	endpoint := s.opts.AzureOptions.Endpoint
	if endpoint == "" && cs != nil {
		endpoint = cs.blobEndpoint
	}
	if endpoint == "" {
		endpoint = s.where.blobServiceURL()
	}
	if endpoint == "" && s.account != "" {
		endpoint = "https://" + s.account + ".blob.core.windows.net"
	}
	if endpoint == "" {
		return &Error{Location: s.loc, Wide: true, Permanent: true,
			Reason: "no storage account: set AZURE_STORAGE_ACCOUNT_NAME or AZURE_STORAGE_CONNECTION_STRING, or give the location as abfss://container@account.dfs.core.windows.net/path"}
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.User != nil {
		// The endpoint may come from a connection string: do not echo it.
		return &Error{Location: s.loc, Wide: true, Permanent: true,
			Reason: "the Azure Blob endpoint is not an http(s)://host[/path] URL without query or credentials (--azure-endpoint, or BlobEndpoint in AZURE_STORAGE_CONNECTION_STRING)"}
	}
	s.endpoint = strings.TrimSuffix(u.String(), "/")
	containerURL := s.endpoint + "/" + s.where.Container

	copts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &httpClient{s: s},
		Retry: policy.RetryOptions{
			MaxRetries:    int32(s.opts.MaxAttempts - 1),
			RetryDelay:    s.opts.RetryDelay,
			MaxRetryDelay: s.opts.MaxBackoff,
		},
		Telemetry: policy.TelemetryOptions{ApplicationID: "deltafs"},
	}}
	if s.opts.MaxAttempts == 1 {
		copts.Retry.MaxRetries = -1 // 0 would mean the SDK's default, 3
	}

	sasURL := func(sas string) string { return containerURL + "?" + strings.TrimPrefix(sas, "?") }
	sharedKey := func(account, key, source string) error {
		if account == "" {
			return &Error{Location: s.loc, Wide: true, Permanent: true,
				Reason: "an account key needs the account's name (AZURE_STORAGE_ACCOUNT_NAME, or a location naming it)"}
		}
		cred, err := container.NewSharedKeyCredential(account, key)
		if err != nil {
			return &Error{Location: s.loc, Wide: true, Permanent: true,
				Reason: "the account key in " + source + " is not valid base64"}
		}
		s.source = "account key from " + source
		s.client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, copts)
		return err
	}

	envSASName, envSAS := firstEnv("AZURE_STORAGE_SAS_TOKEN")
	envKeyName, envKey := firstEnv("AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY")
	secret.Add(envSAS, envKey, os.Getenv("AZURE_CLIENT_SECRET"))
	switch {
	case vended:
		// The catalog's SAS, appended to every attempt by the pipeline;
		// nothing of the environment.
		s.source = "SAS vended by the catalog"
		copts.PerRetryPolicies = append(copts.PerRetryPolicies, vendedSAS{s.opts.Credentials})
		s.client, err = container.NewClientWithNoCredential(containerURL, copts)
	case s.opts.AzureOptions.Anonymous:
		s.source = "anonymous (--azure-anonymous)"
		s.client, err = container.NewClientWithNoCredential(containerURL, copts)
	case cs != nil && cs.key != "":
		err = sharedKey(cs.account, cs.key, "AZURE_STORAGE_CONNECTION_STRING")
	case cs != nil:
		s.source = "SAS token from AZURE_STORAGE_CONNECTION_STRING"
		s.client, err = container.NewClientWithNoCredential(sasURL(cs.sas), copts)
	case envSAS != "":
		s.source = "SAS token from " + envSASName
		s.client, err = container.NewClientWithNoCredential(sasURL(envSAS), copts)
	case envKey != "":
		err = sharedKey(s.account, envKey, envKeyName)
	default:
		cred := s.opts.Credential
		s.source = "Azure identity"
		if cred == nil {
			s.source = "Azure identity (DefaultAzureCredential: environment, workload identity, managed identity, Azure CLI, Azure Developer CLI)"
			dc, derr := azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{
				ClientOptions: azcore.ClientOptions{Telemetry: policy.TelemetryOptions{ApplicationID: "deltafs"}},
			})
			if derr != nil {
				return s.noCredentials(derr)
			}
			cred = dc
		}
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, terr := cred.GetToken(tctx, policy.TokenRequestOptions{Scopes: []string{storageScope}})
		cancel()
		if terr != nil {
			return s.noCredentials(terr)
		}
		s.client, err = container.NewClient(containerURL, cred, copts)
	}
	if err != nil {
		var e *Error
		if asError(err, &e) {
			return e
		}
		return &Error{Location: s.loc, Wide: true, Permanent: true, Reason: "cannot build the Azure client", Detail: secret.Redact(oneLine(err.Error()))}
	}
	return nil
}

// noCredentials is the error of an identity chain that yields no token.
func (s *Store) noCredentials(err error) error {
	// azidentity lists every credential it tried over many lines, with
	// URLs and rules: its first line says enough next to the reason.
	first, _, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
	return &Error{Location: s.loc, Wide: true, Permanent: true,
		Reason: reasonNoCredentials, Detail: secret.Redact(strings.TrimSuffix(oneLine(first), "."))}
}

// oneLine folds a multi-line message (azidentity lists every credential it
// tried on its own line) into one.
func oneLine(msg string) string {
	return strings.Join(strings.Fields(msg), " ")
}
