// Package gcsstore is deltafs's Google Cloud Storage backend.
package gcsstore
