package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNameCollisions checks that generated names that would collide fail with an error naming
// both owners and the name, rather than with code that does not compile or a silent rename.
func TestNameCollisions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{
			name: "service and method names that meet at the underscore",
			files: []string{fileWith("a.proto", "example.com/a",
				`name: "Foo" `+unary("Bar_Baz"),
				`name: "Foo_Bar" `+unary("Baz"))},
			want: "protoc-gen-prpc: the descriptor of method x.Foo.Bar_Baz (a.proto) and the descriptor of method x.Foo_Bar.Baz (a.proto) would both be named Foo_Bar_Baz in package aprpc; rename one of them, or give their files different go_package options",
		},
		{
			name: "a client constructor and another service's client",
			files: []string{fileWith("a.proto", "example.com/a",
				`name: "Foo" `+unary("Get"),
				`name: "NewFoo" `+unary("Get"))},
			want: "the client constructor of service x.Foo (a.proto) and the client of service x.NewFoo (a.proto) would both be named NewFooClient",
		},
		{
			name: "methods with the same Go name",
			files: []string{fileWith("a.proto", "example.com/a",
				`name: "Players" `+unary("get_player")+" "+unary("GetPlayer"))},
			want: "the descriptor of method x.Players.get_player (a.proto) and the descriptor of method x.Players.GetPlayer (a.proto) would both be named Players_GetPlayer",
		},
		{
			name: "a method and another's callback form",
			files: []string{fileWith("a.proto", "example.com/a",
				`name: "Players" `+unary("Get")+" "+unary("GoGet"))},
			want: "protoc-gen-prpc: the callback-form client method of x.Players.Get and the client method of x.Players.GoGet (a.proto) would both be named PlayersClient.GoGet; rename one of the methods",
		},
		{
			name: "a stream method and another's callback form",
			files: []string{fileWith("a.proto", "example.com/a",
				`name: "Players" `+unary("Get")+" "+stream("GoGet", false, true))},
			want: "protoc-gen-prpc: the callback-form client method of x.Players.Get and the client method of x.Players.GoGet (a.proto) would both be named PlayersClient.GoGet; rename one of the methods",
		},
		{
			name: "a stream's descriptor and another service's method's",
			files: []string{fileWith("a.proto", "example.com/a",
				`name: "Foo" `+stream("Bar_Baz", true, true),
				`name: "Foo_Bar" `+unary("Baz"))},
			want: "the descriptor of method x.Foo.Bar_Baz (a.proto) and the descriptor of method x.Foo_Bar.Baz (a.proto) would both be named Foo_Bar_Baz",
		},
		{
			name: "the client of a service of streams only",
			files: []string{fileWith("a.proto", "example.com/a",
				`name: "Feed" `+stream("Watch", false, true),
				`name: "NewFeed" `+unary("Get"))},
			want: "the client constructor of service x.Feed (a.proto) and the client of service x.NewFeed (a.proto) would both be named NewFeedClient",
		},
		{
			name: "a method list and another service's descriptor",
			files: []string{fileWith("a.proto", "example.com/a",
				`name: "Foo_M" `+unary("Get"),
				`name: "Foo" `+unary("MMethods"))},
			want: "the method list of service x.Foo_M (a.proto) and the descriptor of method x.Foo.MMethods (a.proto) would both be named Foo_MMethods",
		},
		{
			name: "two files of one Go package",
			files: []string{
				fileWith("a.proto", "example.com/a", `name: "Foo" `+unary("Get")),
				`name: "b.proto" package: "y" syntax: "proto3" options { go_package: "example.com/a" }
				 message_type { name: "N" }
				 service { name: "Foo" method { name: "Get" input_type: ".y.N" output_type: ".y.N" } }`,
			},
			want: "the method list of service x.Foo (a.proto) and the method list of service y.Foo (b.proto) would both be named FooMethods in package aprpc",
		},
		{
			name: "an import named like a generated identifier",
			files: []string{
				`name: "m.proto" package: "m" syntax: "proto3" options { go_package: "example.com/FooClient" } message_type { name: "M" }`,
				`name: "a.proto" package: "x" syntax: "proto3" dependency: "m.proto" options { go_package: "example.com/a" }
				 service { name: "Foo" method { name: "Get" input_type: ".m.M" output_type: ".m.M" } }`,
			},
			want: "protoc-gen-prpc: a.proto: the import of example.com/FooClient would be named FooClient, like a generated identifier",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := respond(request(t, "", tc.files...))
			require.Contains(t, resp.GetError(), tc.want)
			require.Empty(t, resp.File)
		})
	}
}

// TestNoCollisionAcrossPackages checks that services of the same name in files of different Go
// packages generate into packages of their own, without error.
func TestNoCollisionAcrossPackages(t *testing.T) {
	resp := respond(request(t, "",
		fileWith("a.proto", "example.com/a", `name: "Foo" `+unary("Get")),
		`name: "b.proto" package: "y" syntax: "proto3" options { go_package: "example.com/b" }
		 message_type { name: "N" }
		 service { name: "Foo" method { name: "Get" input_type: ".y.N" output_type: ".y.N" } }`))
	require.Equal(t, []string{"example.com/a/aprpc/a.prpc.go", "example.com/b/bprpc/b.prpc.go"}, generatedNames(t, resp))
}

// TestRuntimeKeepsItsNames checks that message packages named like prpc's calls and reactor
// are the ones imported under other names, so that the generated code and its documentation
// read calls.X and reactor.X for prpc's.
func TestRuntimeKeepsItsNames(t *testing.T) {
	resp := respond(request(t, "",
		`name: "c.proto" package: "c" syntax: "proto3" options { go_package: "example.com/calls" } message_type { name: "C" }`,
		`name: "r.proto" package: "r" syntax: "proto3" options { go_package: "example.com/reactor" } message_type { name: "R" }`,
		`name: "a.proto" package: "x" syntax: "proto3" dependency: "c.proto" dependency: "r.proto" options { go_package: "example.com/a" }
		 service { name: "Foo" method { name: "Get" input_type: ".r.R" output_type: ".c.C" } }`))
	require.Equal(t, []string{"example.com/a/aprpc/a.prpc.go"}, generatedNames(t, resp))
	content := resp.File[0].GetContent()
	for _, want := range []string{
		`calls "github.com/trixnew/prpc/calls"`,
		`calls1 "example.com/calls"`,
		`reactor "github.com/trixnew/prpc/reactor"`,
		`reactor1 "example.com/reactor"`,
		`Foo_Get = calls.MustMethod[*reactor1.R, *calls1.C]("/x.Foo/Get")`,
	} {
		require.Contains(t, content, want)
	}
}
