// Package networkpb holds the generated Go code for network.proto: the
// messages and the DataService gRPC client and server interfaces used by the
// dataservice example. Its subpackage networkpbprpc holds the prpc client that
// protoc-gen-prpc generates from the same file.
//
// Regenerate with `go generate` in this directory; it needs protoc 3.21.12,
// protoc-gen-go v1.36.12, protoc-gen-go-grpc 1.6.2 and a protoc-gen-prpc built
// from this tree on PATH (.ci/gen-check installs them and checks that the files
// are current). buf.gen.yaml here regenerates networkpbprpc with buf and
// `go tool protoc-gen-prpc`, the tool the examples module declares.
package networkpb

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative --prpc_out=. --prpc_opt=paths=source_relative network.proto
