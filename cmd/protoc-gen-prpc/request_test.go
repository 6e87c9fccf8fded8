package main

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// request returns a request to generate files, each a FileDescriptorProto in text format,
// with parameter as the plugin's options.
func request(t *testing.T, parameter string, files ...string) *pluginpb.CodeGeneratorRequest {
	t.Helper()
	req := &pluginpb.CodeGeneratorRequest{Parameter: proto.String(parameter)}
	for _, text := range files {
		f := new(descriptorpb.FileDescriptorProto)
		require.NoError(t, prototext.Unmarshal([]byte(text), f))
		req.ProtoFile = append(req.ProtoFile, f)
		req.FileToGenerate = append(req.FileToGenerate, f.GetName())
	}
	return req
}

// fileWith returns a proto3 file named name in package x with Go package goPackage, message M,
// and the services given in text format.
func fileWith(name, goPackage string, services ...string) string {
	text := `name: "` + name + `" package: "x" syntax: "proto3"
		options { go_package: "` + goPackage + `" }
		message_type { name: "M" }`
	for _, s := range services {
		text += "\nservice { " + s + " }"
	}
	return text
}

// unary returns a unary method named name, from M to M, in text format.
func unary(name string) string {
	return `method { name: "` + name + `" input_type: ".x.M" output_type: ".x.M" }`
}

// generatedNames returns the names of the files in resp, or fails the test on an error.
func generatedNames(t *testing.T, resp *pluginpb.CodeGeneratorResponse) []string {
	t.Helper()
	require.Empty(t, resp.GetError())
	var names []string
	for _, f := range resp.File {
		names = append(names, f.GetName())
	}
	return names
}
