package buildinfo_test

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/buildinfo"
)

// TestVersionIn checks the version reported for each way a program holds the module.
func TestVersionIn(t *testing.T) {
	const path = "github.com/trixnew/prpc"
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"go install …@v1.2.3", debug.BuildInfo{Main: debug.Module{Path: path, Version: "v1.2.3"}}, "v1.2.3"},
		{"built in a working tree", debug.BuildInfo{Main: debug.Module{Path: path, Version: "(devel)"}}, "(devel)"},
		{"a dependency (go tool in a module that requires it)", debug.BuildInfo{
			Main: debug.Module{Path: "example.com/game", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "google.golang.org/protobuf", Version: "v1.36.12"}, {Path: path, Version: "v1.4.0"}},
		}, "v1.4.0"},
		{"replaced by a directory", debug.BuildInfo{
			Main: debug.Module{Path: "example.com/game"},
			Deps: []*debug.Module{{Path: path, Version: "v1.4.0", Replace: &debug.Module{Path: "../prpc"}}},
		}, "(devel)"},
		{"replaced by a fork", debug.BuildInfo{
			Main: debug.Module{Path: "example.com/game"},
			Deps: []*debug.Module{{Path: path, Version: "v1.4.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.4.1"}}},
		}, "v1.4.1"},
		{"a prefix of the path is another module", debug.BuildInfo{
			Main: debug.Module{Path: "example.com/game"},
			Deps: []*debug.Module{{Path: path + "/metrics/otelprpc", Version: "v0.2.0"}},
		}, "(devel)"},
		{"not in the build", debug.BuildInfo{Main: debug.Module{Path: "example.com/other", Version: "v9.0.0"}}, "(devel)"},
		{"no version", debug.BuildInfo{Main: debug.Module{Path: path}}, "(devel)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, buildinfo.VersionIn(&tt.bi, path))
		})
	}
}

// TestModuleVersion checks the running program's own reading: this test binary is the prpc
// module's, built from a working tree.
func TestModuleVersion(t *testing.T) {
	require.Equal(t, buildinfo.Devel, buildinfo.ModuleVersion("github.com/trixnew/prpc"))
	require.Equal(t, buildinfo.Devel, buildinfo.ModuleVersion("example.com/absent"))
}
