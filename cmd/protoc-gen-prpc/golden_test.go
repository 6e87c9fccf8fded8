package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// goldenDir holds the golden test set: see its doc.go.
const goldenDir = "internal/golden"

// goldenRequest returns the request buf generate sends protoc-gen-prpc for the golden set,
// built from golden.binpb, the descriptors of its files and their imports with comments.
func goldenRequest(t *testing.T, parameter string) *pluginpb.CodeGeneratorRequest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, "golden.binpb"))
	require.NoError(t, err)
	set := new(descriptorpb.FileDescriptorSet)
	require.NoError(t, proto.Unmarshal(b, set))
	req := &pluginpb.CodeGeneratorRequest{ProtoFile: set.File, Parameter: proto.String(parameter)}
	for _, f := range set.File {
		if !strings.HasPrefix(f.GetName(), "google/") {
			req.FileToGenerate = append(req.FileToGenerate, f.GetName())
		}
	}
	require.NotEmpty(t, req.FileToGenerate)
	return req
}

// runPlugin runs the program on req as protoc would, through stdin and stdout, and returns its
// response.
func runPlugin(t *testing.T, req *pluginpb.CodeGeneratorRequest) *pluginpb.CodeGeneratorResponse {
	t.Helper()
	in, err := proto.Marshal(req)
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(nil, bytes.NewReader(in), &stdout, &stderr), "stderr: %s", stderr.String())
	require.Empty(t, stderr.String())
	resp := new(pluginpb.CodeGeneratorResponse)
	require.NoError(t, proto.Unmarshal(stdout.Bytes(), resp))
	return resp
}

// TestGolden runs the generator on the golden set and compares what it writes with the
// committed files, which the module's build compiles: every generated file must match, and
// every committed *.prpc.go file must still be generated (a file with no service gets none). PRPC_UPDATE_GOLDEN=1 rewrites the committed files instead.
func TestGolden(t *testing.T) {
	resp := runPlugin(t, goldenRequest(t, "paths=source_relative"))
	require.Empty(t, resp.GetError())

	update := os.Getenv("PRPC_UPDATE_GOLDEN") == "1"
	var generated []string
	for _, f := range resp.File {
		generated = append(generated, f.GetName())
		path := filepath.Join(goldenDir, filepath.FromSlash(f.GetName()))
		if update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(f.GetContent()), 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "generated %s, which is not committed (PRPC_UPDATE_GOLDEN=1 writes it)", f.GetName())
		require.Equal(t, string(want), f.GetContent(), "%s differs from the committed file (PRPC_UPDATE_GOLDEN=1 rewrites it)", f.GetName())
	}
	require.Equal(t, []string{
		"editions/editionsprpc/editions.prpc.go",
		"multi/multiprpc/multi.prpc.go",
		"multi/multiprpc/second.prpc.go",
		"streaming/streamingprpc/streaming.prpc.go",
	}, sorted(generated))

	var committed []string
	require.NoError(t, filepath.WalkDir(goldenDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".prpc.go") {
			rel, _ := filepath.Rel(goldenDir, path)
			committed = append(committed, filepath.ToSlash(rel))
		}
		return err
	}))
	require.Equal(t, sorted(generated), sorted(committed), "committed *.prpc.go files the generator no longer writes")
}

// TestGoldenStable runs the generator twice on the same request: the output must not change,
// whatever the order of Go's map iteration.
func TestGoldenStable(t *testing.T) {
	first := runPlugin(t, goldenRequest(t, "paths=source_relative"))
	for range 3 {
		again := runPlugin(t, goldenRequest(t, "paths=source_relative"))
		require.True(t, proto.Equal(first, again))
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
