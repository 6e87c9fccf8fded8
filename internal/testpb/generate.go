// Package testpb holds the protobuf messages and gRPC service stubs
// (prpctest.TestService) used by prpc's own tests. It is not part of the
// public API.
//
// The generated files test.pb.go, test_grpc.pb.go and testpbprpc/test.prpc.go
// (the prpc client, which protoc-gen-prpc's tests call against a real server)
// are committed. To regenerate them, run from the module root (or
// `go generate ./internal/testpb`):
//
//	protoc --go_out=. --go_opt=paths=source_relative \
//		--go-grpc_out=. --go-grpc_opt=paths=source_relative \
//		--prpc_out=. --prpc_opt=paths=source_relative \
//		internal/testpb/test.proto
//
// with protoc 3.21.12, protoc-gen-go v1.36.12, protoc-gen-go-grpc 1.6.2 and a
// protoc-gen-prpc built from this tree (go build ./cmd/protoc-gen-prpc) on
// PATH; .ci/gen-check installs them and checks that the files are current.
package testpb

//go:generate sh -c "cd ../.. && protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative --prpc_out=. --prpc_opt=paths=source_relative internal/testpb/test.proto"
