package remote

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ParseBucket splits scheme://bucket/prefix into the bucket and the key
// prefix of a table ("" or ending in '/'): the location of S3 and GCS.
// Locations that carry credentials, a port, a query or a fragment are
// refused; the error never repeats the credentials. article is the one
// before the scheme in the messages ("an s3", "a gs"), chain says where
// credentials come from instead.
func ParseBucket(location, scheme, article, chain string) (bucket, prefix string, err error) {
	u, err := url.Parse(location)
	if err != nil {
		// url errors quote the input: keep only the scheme and host part out.
		return "", "", fmt.Errorf("%s location: not a valid URL", scheme)
	}
	if u.User != nil {
		return "", "", errors.New(scheme + " location must not contain credentials (user:secret@); use " + chain)
	}
	if u.Scheme != scheme {
		return "", "", fmt.Errorf("%s: not %s %s:// location", location, article, scheme)
	}
	if u.Host == "" || u.Port() != "" {
		return "", "", fmt.Errorf("%s: expected %s://bucket/prefix", location, scheme)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("%s: %s %s location has no query or fragment", location, article, scheme)
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	return u.Host, prefix, nil
}
