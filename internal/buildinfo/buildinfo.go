// Package buildinfo reads the version of one of prpc's modules in the running program, as
// the go command recorded it: for protoc-gen-prpc's --version and for the instrumentation
// scope of metrics/otelprpc.
package buildinfo

import "runtime/debug"

// Devel is the version of a module built from a working tree or replaced by a directory, or
// of one the program does not hold: what the go command itself reports for a working tree.
const Devel = "(devel)"

// ModuleVersion returns the version of module path in the running program, or Devel (see
// VersionIn).
func ModuleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Devel
	}
	return VersionIn(bi, path)
}

// VersionIn returns the version of module path in bi: the main module's version when the
// program is that module's own (built with go install or go build inside it, or its tests),
// and the dependency's when it was built inside another module (go tool, or a program that
// requires it). A module replaced by another version reports that version; one replaced by a
// directory, one the go command gives no version and one bi does not hold report Devel.
func VersionIn(bi *debug.BuildInfo, path string) string {
	mod := &bi.Main
	if mod.Path != path {
		mod = nil
		for _, d := range bi.Deps {
			if d.Path == path {
				mod = d
				break
			}
		}
	}
	switch {
	case mod == nil:
		return Devel
	case mod.Replace != nil:
		if mod.Replace.Version == "" {
			return Devel
		}
		return mod.Replace.Version
	case mod.Version == "":
		return Devel
	}
	return mod.Version
}
