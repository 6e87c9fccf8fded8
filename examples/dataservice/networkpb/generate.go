// Package networkpb holds the generated Go code for network.proto: the
// messages and the DataService gRPC client and server interfaces used by the
// dataservice example.
//
// Regenerate with `go generate` in this directory; it needs protoc,
// protoc-gen-go and protoc-gen-go-grpc on PATH.
package networkpb

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative network.proto
