package httpjson

import "strconv"

// Quote quotes a string a server sent, for an error line: Go's quoting
// (so a newline or a control character in it stays on the line), cut to
// max bytes with "..." after the closing quote when it was longer.
func Quote(s string, max int) string {
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
