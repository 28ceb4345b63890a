package writer

import "runtime/debug"

// Version is the deltafs version recorded in commitInfo.engineInfo
// ("deltafs/<version>") and in the data files' created_by: the main module's
// version from the build information, or "dev" for a development build.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
