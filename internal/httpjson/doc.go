// Package httpjson holds what deltafs's clients of JSON HTTP APIs (the
// Unity Catalog REST API in catalog/unity, the Delta Sharing protocol in
// storage/sharing) share: the error answer, {CODE_FIELD: ..., "message":
// ...} with its status, as one Go error. The protocols name the code
// field differently ("error_code", "errorCode"), and the clients differ in
// what they retry and how they clean a message, so those stay with them;
// a JSON decoding error is said in the answer's terms by Cause.
package httpjson
