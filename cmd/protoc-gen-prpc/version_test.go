package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVersionIn checks which version --version reports for the ways the program is built.
func TestVersionIn(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"go install …@v1.2.3", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.2.3"}}, "v1.2.3"},
		{"built in a working tree", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, "(devel)"},
		{"go tool in a module that requires prpc", debug.BuildInfo{
			Main: debug.Module{Path: "example.com/game", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "google.golang.org/protobuf", Version: "v1.36.12"}, {Path: modulePath, Version: "v1.4.0"}},
		}, "v1.4.0"},
		{"go tool with prpc replaced by a directory", debug.BuildInfo{
			Main: debug.Module{Path: "example.com/game"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v1.4.0", Replace: &debug.Module{Path: "../prpc"}}},
		}, "(devel)"},
		{"go tool with prpc replaced by a fork", debug.BuildInfo{
			Main: debug.Module{Path: "example.com/game"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v1.4.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.4.1"}}},
		}, "v1.4.1"},
		{"no prpc in the build", debug.BuildInfo{Main: debug.Module{Path: "example.com/other", Version: "v9.0.0"}}, "(devel)"},
		{"no version", debug.BuildInfo{Main: debug.Module{Path: modulePath}}, "(devel)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, versionIn(&tc.bi))
		})
	}
}

// TestRunArguments checks the program's arguments: --version prints the version, and any
// other argument fails, since protoc and buf pass none.
func TestRunArguments(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"--version"}, 0, "protoc-gen-prpc " + moduleVersion() + "\n", ""},
		{[]string{"-version"}, 0, "protoc-gen-prpc " + moduleVersion() + "\n", ""},
		{[]string{"--help"}, 0, "usage: protoc --prpc_out=DIR", ""},
		{[]string{"--prpc_out=."}, 2, "", `protoc-gen-prpc: unknown argument "--prpc_out=."`},
		{[]string{"--version", "x"}, 2, "", `protoc-gen-prpc: unknown argument "--version"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			require.Equal(t, tc.code, run(tc.args, strings.NewReader(""), &stdout, &stderr))
			require.True(t, strings.HasPrefix(stdout.String(), tc.stdout), stdout.String())
			require.True(t, strings.HasPrefix(stderr.String(), tc.stderr), stderr.String())
			if tc.stdout == "" {
				require.Empty(t, stdout.String())
			}
		})
	}
}

// TestRunBadRequest checks that input that is not a CodeGeneratorRequest fails with status 1
// and a message, and no response.
func TestRunBadRequest(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, run(nil, strings.NewReader("\xff\xff\xff"), &stdout, &stderr))
	require.Empty(t, stdout.String())
	require.True(t, strings.HasPrefix(stderr.String(), "protoc-gen-prpc: reading the request: "), stderr.String())
}
