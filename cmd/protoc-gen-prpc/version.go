package main

import "runtime/debug"

// modulePath is the module that holds both the generator and the runtime it generates for.
const modulePath = "github.com/trixnew/prpc"

// moduleVersion returns the version of the prpc module this program was built from.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return develVersion
	}
	return versionIn(bi)
}

// develVersion is what the go command reports for a module built from a working tree.
const develVersion = "(devel)"

// versionIn returns the version of module prpc in bi: the main module's version when the
// program was built with go install or go build inside prpc, and the dependency's when it was
// built inside another module, as go tool protoc-gen-prpc does. A module replaced by a
// directory, or one the go command gives no version, is "(devel)".
func versionIn(bi *debug.BuildInfo) string {
	mod := &bi.Main
	if mod.Path != modulePath {
		mod = nil
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				mod = d
				break
			}
		}
	}
	switch {
	case mod == nil:
		return develVersion
	case mod.Replace != nil:
		if mod.Replace.Version == "" {
			return develVersion
		}
		return mod.Replace.Version
	case mod.Version == "":
		return develVersion
	}
	return mod.Version
}
