package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/catalog/unity/unitytest"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/storage/azstore/aztest"
)

// TestUCEchoedTokenNotPrinted: a catalog that echoes the request's
// Authorization header in its 401 ("Invalid token Bearer dapi...") fails
// `deltafs log` with one line that keeps the refusal, and nothing on
// stderr, at debug level, holds the token.
func TestUCEchoedTokenNotPrinted(t *testing.T) {
	bin := mounttest.Binary(t)
	uc := unitytest.Start(t, time.Minute, "", "")
	uc.AddTable("main.default.t", "s3://lake/t")
	uc.EchoToken(true)
	ucEnv(t, uc)
	loc := "uc://main.default.t"
	_, stderr, code := runBin(t, bin, time.Minute, "log", "--log-level", "debug", loc)
	msg := requireErrorLine(t, stderr, code, loc, -1, []string{"invalid token bearer ***"})
	if strings.Contains(stderr, uc.Token) {
		t.Fatalf("stderr holds the token:\n%s", stderr)
	}
	t.Log(msg)
}

// echoServer is an Azure endpoint that answers every request, HEAD
// included, with a body: the request's line, SAS and all. Go's client
// reads no body for a HEAD, and logs the bytes it finds on the idle
// connection through the log package ("Unsolicited response received on
// idle HTTP channel starting with ..."); methods are the methods seen.
func echoServer(t *testing.T) (endpoint string, methods func() []string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	var seen []string
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					mu.Lock()
					seen = append(seen, req.Method)
					mu.Unlock()
					body := req.Method + " " + req.RequestURI
					fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nx-ms-error-code: ServerBusy\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/" + aztest.Account, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// TestAzureEchoedSASNotPrinted: an Azure endpoint that echoes each request
// line in a body, HEAD answers included: nothing on stderr holds the SAS's
// signature, neither the error line nor the lines Go's HTTP client logs
// itself.
func TestAzureEchoedSASNotPrinted(t *testing.T) {
	bin := mounttest.Binary(t)
	endpoint, methods := echoServer(t)
	const sig = "Zm9vYmFyYmF6cXV4c2VjcmV0c2lnbmF0dXJlMDE="
	sas := "sv=2023-11-03&ss=b&srt=sco&sp=rl&se=2030-01-01T00:00:00Z&spr=https,http&sig=" + url.QueryEscape(sig)
	azEnv(t, "")
	t.Setenv("AZURE_STORAGE_SAS_TOKEN", sas)
	_, stderr, code := runBin(t, bin, time.Minute, "log", "--log-level", "debug", "--azure-endpoint", endpoint, "--azure-retries", "1", "az://lake/t")
	if code != 1 || !strings.Contains(stderr, "Unsolicited response received on idle HTTP channel") {
		t.Fatalf("exit %d, stderr:\n%s\nwant a failure and Go's client's own line about the HEAD's body", code, stderr)
	}
	for _, s := range []string{sig, url.QueryEscape(sig), sig[:16]} {
		if strings.Contains(stderr, s) {
			t.Fatalf("stderr holds the SAS signature:\n%s", stderr)
		}
	}
	t.Logf("%s", stderr)
	t.Logf("methods: %v", methods())
}
