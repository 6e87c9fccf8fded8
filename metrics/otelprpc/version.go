package otelprpc

import (
	"sync"

	"github.com/trixnew/prpc/internal/buildinfo"
)

// moduleVersion returns the version of this module in the running program, read once.
var moduleVersion = sync.OnceValue(func() string { return buildinfo.ModuleVersion(ScopeName) })
