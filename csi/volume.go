package csi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// attributes maps a volume's attributes (its context: a PersistentVolume's
// volumeAttributes or a StorageClass's parameters) to the flags of
// `deltafs mount` and the global flags. "table" is the table's location.
var attributes = map[string]string{
	"shards":         "--shards",
	"shardLayout":    "--shard-layout",
	"classColumn":    "--class-column",
	"idColumn":       "--id-column",
	"dataColumn":     "--data-column",
	"image":          "--image",
	"imageFormat":    "--image-format",
	"where":          "--where",
	"skipUnreadable": "--skip-unreadable",
	"memCache":       "--mem-cache",
	"cacheSize":      "--cache-size",
	"readAhead":      "--read-ahead",
	"refresh":        "--refresh",
	"kernelInodes":   "--kernel-inodes",
	"s3Endpoint":     "--s3-endpoint",
	"azureEndpoint":  "--azure-endpoint",
	"gcsEndpoint":    "--gcs-endpoint",
	"ucEndpoint":     "--uc-endpoint",
	"sharingTimeout": "--sharing-timeout",
	"logLevel":       "--log-level",
}

// secretEnv maps node-publish secrets to the environment variables the
// storage backends and catalogs read.
var secretEnv = map[string]string{
	"awsAccessKeyID":          "AWS_ACCESS_KEY_ID",
	"awsSecretAccessKey":      "AWS_SECRET_ACCESS_KEY",
	"awsSessionToken":         "AWS_SESSION_TOKEN",
	"awsRegion":               "AWS_REGION",
	"azureStorageAccount":     "AZURE_STORAGE_ACCOUNT_NAME",
	"azureStorageKey":         "AZURE_STORAGE_KEY",
	"azureStorageSASToken":    "AZURE_STORAGE_SAS_TOKEN",
	"azureConnectionString":   "AZURE_STORAGE_CONNECTION_STRING",
	"ucToken":                 "UC_TOKEN",
	"databricksToken":         "DATABRICKS_TOKEN",
	"googleServiceAccountKey": "", // a file: GOOGLE_APPLICATION_CREDENTIALS
	"sharingProfile":          "", // a file: the table is PROFILE#share.schema.table
}

// k8sPrefix marks the attributes Kubernetes adds itself (pod information
// with podInfoOnMount, the ephemeral flag): they are not the table's.
const k8sPrefix = "csi.storage.k8s.io/"

// mountSpec is one publish's mount: the arguments of `deltafs mount` and
// the environment and files it needs.
type mountSpec struct {
	args  []string          // after "mount": TABLE TARGET flags...
	env   []string          // KEY=value, secrets included
	files map[string][]byte // secret files, by name in the volume's directory
}

// digest identifies what is mounted (not the secrets' values: they may be
// rotated between two publishes of the same volume).
func (m mountSpec) digest() string {
	h := sha256.Sum256([]byte(strings.Join(m.args, "\x00")))
	return hex.EncodeToString(h[:16])
}

// newMountSpec builds the mount of a volume's context and secrets at
// target, its cache and secret files in dir. Errors are the caller's
// INVALID_ARGUMENT, in one line that names no secret's value.
func newMountSpec(ctx, secrets map[string]string, target, dir string) (mountSpec, error) {
	table := ctx["table"]
	if table == "" {
		return mountSpec{}, fmt.Errorf("the volume's attributes have no table (its location: s3://..., uc://..., a path, or share.schema.table with a sharingProfile secret)")
	}
	m := mountSpec{files: map[string][]byte{}}
	var flags []string
	keys := make([]string, 0, len(ctx))
	for k := range ctx {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := ctx[k]
		switch {
		case k == "table" || strings.HasPrefix(k, k8sPrefix):
			continue
		case attributes[k] == "":
			return mountSpec{}, fmt.Errorf("unknown volume attribute %q (known: table, %s)", k, strings.Join(knownAttributes(), ", "))
		case strings.ContainsAny(v, "\x00\n"):
			return mountSpec{}, fmt.Errorf("volume attribute %q holds a NUL or a newline", k)
		}
		flags = append(flags, attributes[k]+"="+v)
	}
	names := make([]string, 0, len(secrets))
	for k := range secrets {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		env, ok := secretEnv[k]
		switch {
		case !ok:
			return mountSpec{}, fmt.Errorf("unknown node-publish secret %q (known: %s)", k, strings.Join(knownSecrets(), ", "))
		case k == "sharingProfile":
			m.files["profile.share"] = []byte(secrets[k])
			table = filepath.Join(dir, "profile.share") + "#" + table
		case k == "googleServiceAccountKey":
			m.files["google.json"] = []byte(secrets[k])
			m.env = append(m.env, "GOOGLE_APPLICATION_CREDENTIALS="+filepath.Join(dir, "google.json"))
		case strings.ContainsAny(secrets[k], "\x00\n"):
			return mountSpec{}, fmt.Errorf("node-publish secret %q holds a NUL or a newline", k)
		default:
			m.env = append(m.env, env+"="+secrets[k])
		}
	}
	if strings.HasPrefix(table, "-") {
		return mountSpec{}, fmt.Errorf("the table %q starts with '-'", table)
	}
	m.args = append([]string{table, target, "--cache-dir=" + filepath.Join(dir, "cache")}, flags...)
	return m, nil
}

func knownAttributes() []string {
	var ks []string
	for k := range attributes {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func knownSecrets() []string {
	var ks []string
	for k := range secretEnv {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// writeFiles writes the secret files of m into dir, mode 0600.
func (m mountSpec) writeFiles(dir string) error {
	for name, b := range m.files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// CheckVolume reports whether a volume's attributes and node-publish
// secrets (their names; values may be placeholders) make a mount: what
// NodePublishVolume would refuse as INVALID_ARGUMENT.
func CheckVolume(attrs, secrets map[string]string) error {
	_, err := newMountSpec(attrs, secrets, "/target", "/state")
	return err
}
