// Package golden is the golden test set of protoc-gen-prpc: .proto files that cover what the
// generator must handle, the messages protoc-gen-go generates from them, and what
// protoc-gen-prpc generates (the *prpc subpackages). The generated code is part of the module,
// so every build and vet compiles it, and protoc-gen-prpc's tests check that the generator
// still produces it byte for byte from golden.binpb, the files' descriptors with their
// comments, so that the tests need no protoc.
//
//   - multi/multi.proto: several services in one file, streaming methods of each kind beside
//     unary ones,
//     a deprecated method and a deprecated service, every idempotency_level, a request from
//     another package whose Go package is named like prpc's calls, google.protobuf.Empty, proto3
//     optional, line and block comments, and names that would collide without the underscore
//     in Service_Method (Foo.BarBaz and FooBar.Baz) or that are Go keywords.
//   - multi/second.proto: a second, deprecated file of the same Go package, whose generated file
//     has no package comment.
//   - editions/editions.proto: an editions file.
//   - streaming/streaming.proto: a service with only streaming methods, a server stream, a
//     bidirectional stream and a client stream, which gets a client and no policies.
//   - calls/ticket.proto: a file without a service, which generates nothing.
//
// To regenerate everything, run go generate in this directory with buf, protoc-gen-go v1.36.12
// and a protoc-gen-prpc built from this tree on PATH; .ci/gen-check installs them and checks
// that the committed files are current. After a change to the generator alone,
// PRPC_UPDATE_GOLDEN=1 go test ./cmd/protoc-gen-prpc rewrites the generated *prpc files.
package golden

//go:generate buf build --as-file-descriptor-set -o golden.binpb
//go:generate buf generate
