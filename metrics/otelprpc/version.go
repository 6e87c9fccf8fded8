package otelprpc

import (
	"runtime/debug"
	"sync"
)

// develVersion is what the go command reports for a module built from a working tree.
const develVersion = "(devel)"

// moduleVersion returns the version of this module in the running program, read once.
var moduleVersion = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return develVersion
	}
	return versionIn(bi)
})

// versionIn returns the version of module ScopeName in bi: the main module's version when
// the program is this module's own (its tests), the dependency's otherwise. A module
// replaced by a directory, or one the go command gives no version, is "(devel)".
func versionIn(bi *debug.BuildInfo) string {
	mod := &bi.Main
	if mod.Path != ScopeName {
		mod = nil
		for _, d := range bi.Deps {
			if d.Path == ScopeName {
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
