package httpjson

import "testing"

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		body, field, want string
		denied            bool
		status            int
	}{
		{`{"error_code":"PERMISSION_DENIED","message":"no"}`, "error_code", "HTTP 403 PERMISSION_DENIED: no", true, 403},
		{`{"errorCode":"NOT_FOUND","message":"no such table"}`, "errorCode", "HTTP 404 NOT_FOUND: no such table", true, 404},
		// The other protocol's field is not this one's code.
		{`{"errorCode":"NOT_FOUND","message":"gone"}`, "error_code", "HTTP 404: gone", true, 404},
		{`<html>bad gateway</html>`, "errorCode", "HTTP 502", false, 502},
		// A message that is not a string leaves both empty, as a failed
		// json.Unmarshal into the answer's struct did.
		{`{"errorCode":"X","message":7}`, "errorCode", "HTTP 500", false, 500},
		{`{}`, "errorCode", "HTTP 429", false, 429},
		{`{"message":"bad token"}`, "error_code", "HTTP 401: bad token", true, 401},
		// A server that echoes the request's header: not the token.
		{`{"error_code":"UNAUTHENTICATED","message":"Invalid token Bearer dapi0123456789abcdef"}`, "error_code", "HTTP 401 UNAUTHENTICATED: Invalid token Bearer ***", true, 401},
		// A server's newlines and control characters stay off our line.
		{`{"error_code":"A\nB","message":"line one\r\nline two\u0000\u001b[31m"}`, "error_code", "HTTP 500 A B: line one line two[31m", false, 500},
	} {
		e := Decode(c.status, []byte(c.body), c.field)
		if got := e.Error(); got != c.want {
			t.Errorf("Decode(%d, %s, %s) = %q, want %q", c.status, c.body, c.field, got, c.want)
		}
		if e.Denied() != c.denied {
			t.Errorf("Decode(%d, %s).Denied() = %v", c.status, c.body, e.Denied())
		}
	}
}
