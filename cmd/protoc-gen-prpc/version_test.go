package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

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
