package main

import (
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the program: with --version it prints the module version; with no argument it reads
// a CodeGeneratorRequest from stdin and writes the CodeGeneratorResponse to stdout, as protoc
// and buf expect. Problems with the request (a bad option, names that collide) go into the
// response's error field, which protoc and buf print; only a request that cannot be read or a
// response that cannot be written end the program with status 1, and a bad argument with 2.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 1 && (args[0] == "--version" || args[0] == "-version"):
		fmt.Fprintln(stdout, "protoc-gen-prpc", moduleVersion())
		return 0
	case len(args) == 1 && (args[0] == "--help" || args[0] == "-help" || args[0] == "-h"):
		fmt.Fprintln(stdout, usage)
		return 0
	case len(args) > 0:
		fmt.Fprintf(stderr, "protoc-gen-prpc: unknown argument %q; protoc and buf run this program, and its only argument is --version\n%s\n", args[0], usage)
		return 2
	}
	in, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "protoc-gen-prpc: reading the request: %v\n", err)
		return 1
	}
	req := new(pluginpb.CodeGeneratorRequest)
	if err := proto.Unmarshal(in, req); err != nil {
		fmt.Fprintf(stderr, "protoc-gen-prpc: reading the request: %v\n", err)
		return 1
	}
	out, err := proto.Marshal(respond(req))
	if err == nil {
		_, err = stdout.Write(out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "protoc-gen-prpc: writing the response: %v\n", err)
		return 1
	}
	return 0
}

const usage = `usage: protoc --prpc_out=DIR [--prpc_opt=paths=source_relative,package_suffix=prpc] FILE.proto
       protoc-gen-prpc --version
The manual: go doc github.com/trixnew/prpc/cmd/protoc-gen-prpc`

// respond runs the generator on req and returns its response: the generated files, or an
// error.
func respond(req *pluginpb.CodeGeneratorRequest) *pluginpb.CodeGeneratorResponse {
	opts := defaultOptions()
	gen, err := protogen.Options{ParamFunc: opts.set}.New(req)
	if err != nil {
		return &pluginpb.CodeGeneratorResponse{
			Error:             proto.String(err.Error()),
			SupportedFeatures: proto.Uint64(supportedFeatures),
			MinimumEdition:    proto.Int32(int32(minimumEdition)),
			MaximumEdition:    proto.Int32(int32(maximumEdition)),
		}
	}
	gen.SupportedFeatures = supportedFeatures
	gen.SupportedEditionsMinimum = minimumEdition
	gen.SupportedEditionsMaximum = maximumEdition
	if err := generate(gen, opts); err != nil {
		gen.Error(err)
	}
	return gen.Response()
}

// The features and editions the generator supports, as protoc-gen-go-grpc declares them: it
// reads only services, methods, their options and comments, which proto3 optional fields and
// editions do not change.
const (
	supportedFeatures = uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL) |
		uint64(pluginpb.CodeGeneratorResponse_FEATURE_SUPPORTS_EDITIONS)
	minimumEdition = descriptorpb.Edition_EDITION_PROTO2
	maximumEdition = descriptorpb.Edition_EDITION_2024
)
