package httpjson

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/deltafs/deltafs/internal/secret"
)

// APIError is an API's answer other than success: its status, and the error
// code and message of its JSON body (empty when the body has none).
type APIError struct {
	Status  int
	Code    string // e.g. PERMISSION_DENIED
	Message string
}

// Error is "HTTP status[ code][: message]".
func (e *APIError) Error() string {
	s := fmt.Sprintf("HTTP %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Denied reports a refusal that retrying cannot change: bad token (401),
// no privilege (403), no such table (404).
func (e *APIError) Denied() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || e.Status == http.StatusNotFound
}

// Decode is the error answer of status with body, the code under
// codeField, each on one line, its message without secrets (secret.Redact:
// a server may echo the request's token). A body that is not such an
// object leaves Code and Message empty.
func Decode(status int, body []byte, codeField string) *APIError {
	e := &APIError{Status: status}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return e
	}
	var code, msg string
	if raw, ok := m[codeField]; ok && json.Unmarshal(raw, &code) != nil {
		return e
	}
	if raw, ok := m["message"]; ok && json.Unmarshal(raw, &msg) != nil {
		return e
	}
	// A server's words go on one line of ours, without our secrets.
	e.Code, e.Message = oneLine(code), secret.Redact(oneLine(msg))
	return e
}

// oneLine is s with every run of white space (newlines included) one
// space, and control characters dropped.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}
