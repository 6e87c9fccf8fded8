// Command protoc-gen-prpc generates, from a .proto file, what a Go program needs to call the
// file's gRPC services with prpc (github.com/trixnew/prpc): a typed method descriptor per
// method, each service's method list and default method policies, and a client with Go methods
// that make its unary calls and open its streams, server-streaming, bidirectional and
// client-streaming. It is a protoc plugin, built on
// google.golang.org/protobuf/compiler/protogen like protoc-gen-go, and it lives in the prpc
// module, so the generator and the runtime it generates for always share a version.
//
// # Install and run
//
// Install it with
//
//	go install github.com/trixnew/prpc/cmd/protoc-gen-prpc@latest
//
// or, to pin it in your module's go.mod beside the prpc it generates for,
//
//	go get -tool github.com/trixnew/prpc/cmd/protoc-gen-prpc
//
// With protoc, beside protoc-gen-go (the messages) and, for servers, protoc-gen-go-grpc:
//
//	protoc --go_out=. --go_opt=paths=source_relative \
//		--prpc_out=. --prpc_opt=paths=source_relative \
//		game/v1/lobby.proto
//
// With buf, a buf.gen.yaml such as
//
//	version: v2
//	plugins:
//	  - local: protoc-gen-go
//	    out: .
//	    opt: paths=source_relative
//	  - local: protoc-gen-prpc # or, as a go tool: ["go", "tool", "protoc-gen-prpc"]
//	    out: .
//	    opt: paths=source_relative
//
// The plugin declares proto3 optional fields and editions (up to 2024) as supported, as
// protoc-gen-go-grpc does: it reads only services, methods, their options and comments.
// protoc-gen-prpc --version prints the version of the prpc module it was built from, or
// (devel) for a build from a working tree.
//
// # Output
//
// For game/v1/lobby.proto whose go_package is example.com/game/v1;gamev1, the generated file is
// lobby.prpc.go in package gamev1prpc, a subdirectory of the messages' package
// (example.com/game/v1/gamev1prpc). The messages' package, which servers share, thus never
// imports prpc. Files without a method produce nothing, and so does a service without one. The first file of a package in a run carries the package comment, a manual
// for its services: give protoc all the files of one Go package in one run, as buf does, so
// that the package has one. The header names the generator and the source file and nothing that
// differs between machines or versions, so regenerating is byte-stable.
//
// Options, separated by commas in --prpc_opt or in buf's opt:
//
//   - package_suffix=SUFFIX names the generated package: the messages' Go package name
//     followed by SUFFIX, in a subdirectory of that name. Default "prpc"; one or more
//     lowercase letters, digits or '_'. It cannot be empty: in the messages' own package the
//     client's names would collide with protoc-gen-go-grpc's (LobbyClient, NewLobbyClient),
//     and the servers would import prpc.
//   - paths, module and M<file>=<import path> work as for protoc-gen-go.
//
// Any other option fails with an error that names it.
//
// # What is generated
//
// For each service Lobby with unary methods Join and Leave and streaming methods Watch (a server
// stream) and Chat (bidirectional), from package game.v1:
//
//	var (
//		Lobby_Join  = calls.MustMethod[*gamev1.JoinRequest, *gamev1.JoinResponse]("/game.v1.Lobby/Join")
//		Lobby_Leave = calls.MustMethod[*gamev1.LeaveRequest, *emptypb.Empty]("/game.v1.Lobby/Leave")
//		Lobby_Watch = calls.MustStreamMethod[*gamev1.WatchRequest, *gamev1.LobbyState]("/game.v1.Lobby/Watch")
//		Lobby_Chat  = calls.MustBidiMethod[*gamev1.ChatMessage, *gamev1.ChatMessage]("/game.v1.Lobby/Chat")
//	)
//	func LobbyMethods() []calls.Descriptor        // for reactor.Config.Methods
//	func LobbyPolicies() []reactor.MethodPolicy   // for reactor.Config.Policies
//	type LobbyClient struct{ … }
//	func NewLobbyClient(r *reactor.Reactor) *LobbyClient
//	func (c *LobbyClient) Join(req *gamev1.JoinRequest, opts *calls.Options) *calls.Promise[*gamev1.JoinResponse]
//	func (c *LobbyClient) GoJoin(req *gamev1.JoinRequest, opts *calls.Options, fn func(*gamev1.JoinResponse, error)) error
//	func (c *LobbyClient) Leave(req *gamev1.LeaveRequest, opts *calls.Options) *calls.Promise[*emptypb.Empty]
//	func (c *LobbyClient) GoLeave(req *gamev1.LeaveRequest, opts *calls.Options, fn func(*emptypb.Empty, error)) error
//	func (c *LobbyClient) Watch(req *gamev1.WatchRequest, opts *calls.StreamOptions,
//		h calls.StreamHandler[*gamev1.WatchRequest, *gamev1.LobbyState]) *calls.Stream[*gamev1.WatchRequest, *gamev1.LobbyState]
//	func (c *LobbyClient) Chat(opts *calls.StreamOptions,
//		h calls.StreamHandler[*gamev1.ChatMessage, *gamev1.ChatMessage]) *calls.BidiStream[*gamev1.ChatMessage, *gamev1.ChatMessage]
//
// so that game code reads client.Join(req, nil).Then(…), or client.GoJoin(req, nil, func(resp,
// err) { … }) where it needs no promise. A unary client method is reactor.Call with the
// method's descriptor; its Go form is reactor.Go. The descriptors carry the methods' comments
// from the .proto, and a
// Deprecated: paragraph where the method or its service is deprecated; so do the client's
// methods. Every declaration checks at program start, as calls.MustMethod does, that the
// method exists and takes and returns those types.
//
// LobbyPolicies returns, as a new slice on each call, a reactor.MethodPolicy with Idempotent
// set for each method whose idempotency_level is NO_SIDE_EFFECTS or IDEMPOTENT, as connect-go
// reads the same option: gRPC retries those methods' calls as reactor.Config.Retry says. The
// reactor takes one policy per method and rejects a second one, so to change a method's policy
// (its Timeout, say) set the field on its entry, and append entries for other methods.
//
// A streaming method's descriptor is a calls.StreamMethod for a server stream and a
// calls.BidiMethod for a bidirectional or client stream; the method list holds them beside the
// unary ones, so that reactor.Config.Methods allows the streams too. Its client method has the
// method's name and opens the stream without blocking: for a server stream it takes the request
// and is reactor.Watch, for a bidirectional or client stream it takes none and is reactor.Bidi,
// whose handle sends (Send, CloseSend). The handler's OnMessage runs for each message, in
// order, inside the reactor's Tick and under its budget, and OnEnd once, last; a client
// stream's one response is its one message. A stream method has no Go form: there is no
// promise to save. Policies list unary methods only, and a service whose methods all stream
// gets no policies function.
//
// # Why the client is a concrete type
//
// The client is a struct, not an interface: only package reactor can make a promise or a
// stream's handle, so a user's implementation of an interface could not return one. To test game code that uses a
// client, give the client a reactor whose Config.Conn is a reactortest.Backend that answers
// the calls in process (package github.com/trixnew/prpc/reactor/reactortest): register on it
// the fake server that protoc-gen-go-grpc's registration function takes, or a function per
// method. The generated package's documentation shows how; go doc of it reads as a manual for
// the service.
//
// # Names
//
// Identifiers are made of the service's and the method's Go names, as protoc-gen-go-grpc makes
// them (Service_Method for descriptors, so that service Foo's method BarBaz and service
// FooBar's method Baz do not meet). They are exported, so none is a Go keyword or predeclared
// identifier, and messages of other packages, well-known types included, are imported under
// names that cannot clash with prpc's calls and reactor. The few names that still collide —
// service Foo's method Bar_Baz and service Foo_Bar's method Baz, services Foo and NewFoo,
// methods get_player and GetPlayer, a method GoGet beside a unary Get (whose callback form is
// GoGet), or two files of one Go package that declare the same service name — fail the run with an error that names both, rather than being renamed:
// rename one, or give the files different go_package options.
//
// # Compatibility
//
// Generated code refers to a calls.SupportPackageIsVersionN constant, the oldest whose prpc has
// every runtime symbol the file uses: SupportPackageIsVersion3 for a file with streaming
// methods (calls.StreamMethod, reactor.Watch and reactor.Bidi), SupportPackageIsVersion2 for
// one of unary methods only (the Go forms use reactor.Go, which version 1 lacked). Code
// generated by a newer protoc-gen-prpc than the prpc it is built with thus fails to compile,
// naming a constant that prpc lacks: upgrade github.com/trixnew/prpc. A new constant is added whenever generated code
// starts to use a runtime symbol that older versions lack.
package main
