// Package cloudtest holds what the cloud emulators' test helpers
// (storage/s3store/s3test, storage/azstore/aztest, storage/gcsstore/gcstest) share: an
// in-process Toxiproxy between a client and a server for network faults
// (Proxy), the goroutine leak check (CheckGoroutines), a loopback HTTP
// server that stops and restarts on the same address and counts its open
// connections (Loopback), fault middleware for any fake's handler (an
// ErrorSwitch answering with the cloud's throttling or server error, a
// Staller stopping bodies mid-way), the upload walk over a local table
// directory (WalkFiles), what a child process needs (FreePort,
// OutputBuffer, StopGroup), and a Trap: the other origin of a redirect,
// recording the credentials it receives.
// It knows nothing of any cloud.
package cloudtest
