package cloudtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Proxy is an in-process Toxiproxy TCP proxy on 127.0.0.1 in front of an
// endpoint: point a client at Endpoint, then add and remove toxics
// (latency, reset_peer, timeout, bandwidth, limit_data, slicer, slow_close)
// to inject network faults between client and server.
type Proxy struct {
	Endpoint string // http://127.0.0.1:port, forwarding to the upstream
	p        *toxiproxy.Proxy
}

// StartProxy starts a proxy to upstream (an http://host:port endpoint);
// t.Cleanup stops it and closes its connections.
func StartProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	p, err := NewProxy(upstream)
	if err != nil {
		t.Fatalf("cloudtest: %v", err)
	}
	t.Cleanup(p.Stop)
	return p
}

// NewProxy is StartProxy outside a test (benchmarks): the caller stops it.
func NewProxy(upstream string) (*Proxy, error) {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	host := strings.TrimPrefix(strings.TrimPrefix(upstream, "http://"), "https://")
	p := toxiproxy.NewProxy(srv, "cloudtest", "127.0.0.1:0", host)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start toxiproxy: %w", err)
	}
	return &Proxy{Endpoint: "http://" + p.Listen, p: p}, nil
}

// Add adds a toxic (see AddToxic) outside a test.
func (p *Proxy) Add(name, typ, stream string, toxicity float32, attrs map[string]any) error {
	body, err := json.Marshal(map[string]any{
		"name": name, "type": typ, "stream": stream, "toxicity": toxicity, "attributes": attrs,
	})
	if err != nil {
		return err
	}
	_, err = p.p.Toxics.AddToxicJson(bytes.NewReader(body))
	return err
}

// AddToxic adds a toxic. stream is "downstream" (server to client) or
// "upstream"; attrs are the toxic's attributes, as in Toxiproxy's HTTP API
// (latency: {"latency": ms, "jitter": ms}; reset_peer: {"timeout": ms};
// timeout: {"timeout": ms, 0 = forever}; bandwidth: {"rate": KB/s};
// limit_data: {"bytes": n}). A toxic applies to open connections too.
func (p *Proxy) AddToxic(t testing.TB, name, typ, stream string, toxicity float32, attrs map[string]any) {
	t.Helper()
	if err := p.Add(name, typ, stream, toxicity, attrs); err != nil {
		t.Fatalf("cloudtest: add toxic %s: %v", name, err)
	}
}

// RemoveToxic removes a toxic by name.
func (p *Proxy) RemoveToxic(t testing.TB, name string) {
	t.Helper()
	if err := p.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
		t.Fatalf("cloudtest: remove toxic %s: %v", name, err)
	}
}

// Stop closes the proxy's listener and every connection through it.
func (p *Proxy) Stop() { p.p.Stop() }

// Start restarts a stopped proxy on the same address.
func (p *Proxy) Start(t testing.TB) {
	t.Helper()
	if err := p.p.Start(); err != nil {
		t.Fatalf("cloudtest: restart toxiproxy: %v", err)
	}
}
