package snapshot

import (
	"fmt"
	"net/url"
	"path"
	"strings"
)

// Paths in the log are URIs (RFC 2396): relative to the table root and
// URL-encoded, or absolute. fileKey maps one to a storage key relative to
// the table root; an absolute URI must point inside the table.

// fileKey resolves p, a path from the log, against the table at root (the
// storage's Location: a local path or a URL).
func fileKey(root, p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path")
	}
	var rel string
	if isAbsURI(p) {
		u, err := url.Parse(p)
		if err != nil {
			return "", err
		}
		rs, rh, rp := splitRoot(root)
		us := strings.ToLower(u.Scheme)
		if us == "" {
			us = "file"
		}
		if normScheme(us) != normScheme(rs) || u.Host != rh {
			return "", fmt.Errorf("absolute path outside the table %s", root)
		}
		up := path.Clean("/" + u.Path)
		rp = strings.TrimSuffix(path.Clean("/"+rp), "/")
		r, ok := strings.CutPrefix(up, rp+"/")
		if !ok {
			return "", fmt.Errorf("absolute path outside the table %s", root)
		}
		rel = r
	} else {
		dec, err := url.PathUnescape(p)
		if err != nil {
			return "", fmt.Errorf("bad URL encoding: %w", err)
		}
		rel = dec
	}
	if rel == "" || strings.HasPrefix(rel, "/") {
		return "", fmt.Errorf("not a file path")
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return "", fmt.Errorf("path leaves the table or is not clean")
		}
	}
	return rel, nil
}

// isAbsURI reports whether p is an absolute path or URI ("/x", "s3://b/x",
// "file:/x") rather than a relative one. A relative path may contain ':'
// (a partition value), but only after a '/' or with no scheme syntax.
func isAbsURI(p string) bool {
	if strings.HasPrefix(p, "/") {
		return true
	}
	i := strings.IndexByte(p, ':')
	if i <= 0 || strings.ContainsRune(p[:i], '/') {
		return false
	}
	for j := 0; j < i; j++ {
		c := p[j]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'))) {
			return false
		}
	}
	// "scheme:/..." only: "a:b/c" with no slash after the colon is
	// treated as relative (a file named like a partition value).
	return strings.HasPrefix(p[i+1:], "/")
}

// splitRoot splits a table location into scheme, host and path.
func splitRoot(root string) (scheme, host, p string) {
	if i := strings.Index(root, "://"); i > 0 {
		u, err := url.Parse(root)
		if err == nil {
			return strings.ToLower(u.Scheme), u.Host, u.Path
		}
	}
	return "file", "", root
}

// normScheme treats Hadoop's S3 and Azure scheme variants as one.
func normScheme(s string) string {
	switch s {
	case "s3a", "s3n":
		return "s3"
	case "abfss":
		return "abfs"
	case "wasbs":
		return "wasb"
	}
	return s
}
