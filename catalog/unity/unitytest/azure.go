package unitytest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/deltafs/deltafs/storage/azstore"
)

// Tables on Azure: the catalog vends a real service SAS for the table's
// container (read and list, signed with the account key of VendAzure,
// Azurite's), expiring after Lifetime; AzureProxy, in front of Azurite,
// lets through only requests that carry a SAS the catalog vended and that
// has not expired, and Azurite checks the signature and expiry itself.

// VendAzure makes the catalog sign the SAS of abfss://, wasbs:// and az://
// tables with this account's key.
func (s *Server) VendAzure(account, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.azAccount, s.azKey = account, key
}

// vendAzure signs a SAS for the container of location, valid until
// expires (whole seconds: the SAS's se has no fraction).
func (s *Server) vendAzure(location string, expires time.Time) (string, error) {
	where, err := azstore.ParseLocation(location)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	account, key := s.azAccount, s.azKey
	s.mu.Unlock()
	cred, err := container.NewSharedKeyCredential(account, key)
	if err != nil {
		return "", err
	}
	qp, err := sas.BlobSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		ExpiryTime:    expires,
		Permissions:   (&sas.ContainerPermissions{Read: true, List: true}).String(),
		ContainerName: where.Container,
	}.SignWithSharedKey(cred)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.sas[qp.Signature()] = expires
	s.secrets = append(s.secrets, qp.Encode(), qp.Signature(), url.QueryEscape(qp.Signature()))
	s.mu.Unlock()
	return qp.Encode(), nil
}

// AzureProxy starts a reverse proxy on 127.0.0.1 in front of an Azurite
// Blob endpoint (http://127.0.0.1:PORT/devstoreaccount1) and returns its
// endpoint (the same path on the proxy's port): the one to give deltafs.
// It answers 403 AuthenticationFailed, as Azure does, a request without a
// vended SAS or with an expired one (counted in Expired and Refused) and
// counts Azurite's own refusals in Refused; t.Cleanup stops it.
func (s *Server) AzureProxy(t testing.TB, upstream string) string {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode == http.StatusForbidden {
			s.Refused.Add(1)
		}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sig := r.URL.Query().Get("sig")
		s.mu.Lock()
		expires, ok := s.sas[sig]
		s.mu.Unlock()
		switch {
		case !ok:
			s.Refused.Add(1)
			azureError(w, r, "AuthenticationFailed", "Server failed to authenticate the request: no SAS the catalog vended.")
			return
		case !time.Now().Before(expires):
			s.Expired.Add(1)
			azureError(w, r, "AuthenticationFailed", "Signed expiry time must be after signed start time.")
			return
		}
		s.accept("sas:" + sig)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + u.Path
}

func azureError(w http.ResponseWriter, r *http.Request, code, msg string) {
	w.Header().Set("x-ms-error-code", code)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusForbidden)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="utf-8"?><Error><Code>` + code + `</Code><Message>` + msg + `</Message></Error>`))
	}
}
