// Package secret keeps deltafs's secrets where they belong, in one place
// for every client (Unity Catalog, Delta Sharing, the cloud backends with
// vended credentials):
//
//   - never in a line: Redact removes every secret a client registered
//     (Add: bearer tokens, vended keys, session tokens, SAS tokens, OAuth
//     tokens) and every secret that has a recognisable shape (a "Bearer
//     ..." credential, the signature and credential parameters of a
//     pre-signed or SAS URL) from a string. Handler applies it to every
//     log line, those of Go's own log package included once the handler is
//     slog's default (net/http logs an unsolicited answer's bytes there),
//     and Error to an error.
//   - never to another origin: CheckRedirect refuses a redirect that would
//     carry a request's credentials (its Authorization header) to another
//     scheme, host or port, naming both origins, and a redirect from https
//     to anything else; a request without credentials (a pre-signed URL)
//     may follow a redirect to another https origin. Go's client alone
//     would forward the header to another port of the same host and from
//     https to http. CheckRedirectAll, for the cloud backends whose
//     credentials are set below the client (a signer, an oauth2
//     transport, a SAS in the query), keeps every request at its origin.
//
// The registry keeps the latest MaxSecrets secrets: a mount renews its
// vended credentials every 40 minutes or so, and a secret that has been
// replaced that many times is long dead.
package secret
