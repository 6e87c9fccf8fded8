package main

import "github.com/trixnew/prpc/internal/buildinfo"

// modulePath is the module that holds both the generator and the runtime it generates for.
const modulePath = "github.com/trixnew/prpc"

// moduleVersion returns the version of the prpc module this program was built from: the
// main module's with go install or go build inside prpc, the dependency's when it was built
// inside another module, as go tool protoc-gen-prpc does.
func moduleVersion() string { return buildinfo.ModuleVersion(modulePath) }
