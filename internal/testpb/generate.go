// Package testpb holds the protobuf messages and gRPC service stubs
// (prpctest.TestService) used by prpc's own tests. It is not part of the
// public API.
//
// The generated files test.pb.go and test_grpc.pb.go are committed. To
// regenerate them, run from the module root (or `go generate ./internal/testpb`):
//
//	protoc --go_out=. --go_opt=paths=source_relative \
//		--go-grpc_out=. --go-grpc_opt=paths=source_relative \
//		internal/testpb/test.proto
//
// with protoc 3.21.12, protoc-gen-go v1.36.12 and protoc-gen-go-grpc 1.6.2
// on PATH.
package testpb

//go:generate sh -c "cd ../.. && protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative internal/testpb/test.proto"
