package s3test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// StartMotoAuth starts moto_server with authentication enforced, and
// returns its endpoint and the one key pair it accepts (an IAM user allowed
// s3:*). Plain moto accepts any key pair and any signature; with
// INITIAL_NO_AUTH_ACTION_COUNT set it checks SigV4 signatures against its
// IAM users after that many actions, answering SignatureDoesNotMatch for a
// wrong secret, InvalidAccessKeyId for an unknown key and 403 for unsigned
// requests (but 500 for an unsigned ListObjectsV2, a moto bug). The three
// unauthenticated actions create the user, its policy and its key.
//
// moto 5.2.1's signature check is wrong for percent-encoded characters: a
// correctly signed request whose path or query holds one (a key with
// non-ASCII characters, '%' or '=' escapes, or a ListObjectsV2 prefix with
// '/') is refused with SignatureDoesNotMatch; boto3 fails the same way. Use
// this server for authentication tests on plain keys, and StartMoto for
// everything else.
// NewClient, CreateBucket, Put and UploadDir use the key pair for this
// endpoint (see Credentials).
func StartMotoAuth(t testing.TB) (endpoint, accessKey, secretKey string) {
	t.Helper()
	endpoint = startMotoT(t, []string{"INITIAL_NO_AUTH_ACTION_COUNT=3"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}`
	steps := []url.Values{
		{"Action": {"CreateUser"}, "UserName": {"deltafs"}},
		{"Action": {"PutUserPolicy"}, "UserName": {"deltafs"}, "PolicyName": {"s3"}, "PolicyDocument": {policy}},
		{"Action": {"CreateAccessKey"}, "UserName": {"deltafs"}},
	}
	var body []byte
	for _, v := range steps {
		v.Set("Version", "2010-05-08")
		var err error
		body, err = iamCall(ctx, endpoint, v)
		if err != nil {
			t.Fatalf("s3test: moto IAM %s: %v", v.Get("Action"), err)
		}
	}
	var resp struct {
		AccessKeyID     string `xml:"CreateAccessKeyResult>AccessKey>AccessKeyId"`
		SecretAccessKey string `xml:"CreateAccessKeyResult>AccessKey>SecretAccessKey"`
	}
	if err := xml.Unmarshal(body, &resp); err != nil || resp.AccessKeyID == "" {
		t.Fatalf("s3test: moto CreateAccessKey answer %q: %v", body, err)
	}
	endpointCreds.Store(endpoint, [2]string{resp.AccessKeyID, resp.SecretAccessKey})
	t.Cleanup(func() { endpointCreds.Delete(endpoint) })
	return endpoint, resp.AccessKeyID, resp.SecretAccessKey
}

// iamCall sends one signed IAM query API request.
func iamCall(ctx context.Context, endpoint string, v url.Values) ([]byte, error) {
	form := v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/", strings.NewReader(form))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	sum := sha256.Sum256([]byte(form))
	creds := aws.Credentials{AccessKeyID: AccessKey, SecretAccessKey: SecretKey}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "iam", Region, time.Now()); err != nil {
		return nil, err
	}
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	return body, nil
}
