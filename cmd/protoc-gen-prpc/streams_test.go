package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// stream returns a streaming method named name, from M to M, in text format: server-streaming,
// client-streaming or both.
func stream(name string, client, server bool) string {
	text := `method { name: "` + name + `" input_type: ".x.M" output_type: ".x.M"`
	if client {
		text += " client_streaming: true"
	}
	if server {
		text += " server_streaming: true"
	}
	return text + " }"
}

// TestStreamMethods checks what a file generates for each kind of method: the descriptor's
// constructor, the client method's signature and the reactor function it calls, the calls
// constant the file requires (Version3 only with streams, so that a file of unary methods
// still builds with an older prpc), and a policies function only for a service with unary
// methods.
func TestStreamMethods(t *testing.T) {
	for _, tc := range []struct {
		name    string
		methods string
		want    []string
		absent  []string
	}{
		{
			name:    "unary only",
			methods: unary("Get"),
			want: []string{
				"const _ = calls.SupportPackageIsVersion2\n",
				`Feed_Get = calls.MustMethod[*a.M, *a.M]("/x.Feed/Get")`,
				"func FeedPolicies() []reactor.MethodPolicy {",
			},
			absent: []string{"SupportPackageIsVersion3", "StreamMethod", "BidiMethod", "StreamHandler"},
		},
		{
			name:    "a server stream only",
			methods: stream("Watch", false, true),
			want: []string{
				"const _ = calls.SupportPackageIsVersion3\n",
				`Feed_Watch = calls.MustStreamMethod[*a.M, *a.M]("/x.Feed/Watch")`,
				"func FeedMethods() []calls.Descriptor {\n\treturn []calls.Descriptor{\n\t\tFeed_Watch,\n\t}\n}",
				"func (c *FeedClient) Watch(req *a.M, opts *calls.StreamOptions, h calls.StreamHandler[*a.M, *a.M]) *calls.Stream[*a.M, *a.M] {\n\treturn reactor.Watch(c.r, Feed_Watch, req, opts, h)\n}",
				"func NewFeedClient(r *reactor.Reactor) *FeedClient {",
			},
			absent: []string{"SupportPackageIsVersion2", "FeedPolicies", "MustMethod[", "calls.Options", "calls.Promise", "GoWatch"},
		},
		{
			name:    "a bidirectional stream only",
			methods: stream("Chat", true, true),
			want: []string{
				"const _ = calls.SupportPackageIsVersion3\n",
				`Feed_Chat = calls.MustBidiMethod[*a.M, *a.M]("/x.Feed/Chat")`,
				"func (c *FeedClient) Chat(opts *calls.StreamOptions, h calls.StreamHandler[*a.M, *a.M]) *calls.BidiStream[*a.M, *a.M] {\n\treturn reactor.Bidi(c.r, Feed_Chat, opts, h)\n}",
				"a bidirectional stream, for reactor.Bidi",
			},
			absent: []string{"FeedPolicies", "GoChat", "MustStreamMethod"},
		},
		{
			name:    "a client stream only",
			methods: stream("Upload", true, false),
			want: []string{
				`Feed_Upload = calls.MustBidiMethod[*a.M, *a.M]("/x.Feed/Upload")`,
				"func (c *FeedClient) Upload(opts *calls.StreamOptions, h calls.StreamHandler[*a.M, *a.M]) *calls.BidiStream[*a.M, *a.M] {\n\treturn reactor.Bidi(c.r, Feed_Upload, opts, h)\n}",
				"a client stream, for reactor.Bidi",
			},
			absent: []string{"FeedPolicies", "GoUpload"},
		},
		{
			name:    "unary and streaming, in the order of the .proto",
			methods: stream("Watch", false, true) + " " + unary("Get") + " " + stream("Chat", true, true),
			want: []string{
				"const _ = calls.SupportPackageIsVersion3\n",
				"return []calls.Descriptor{\n\t\tFeed_Watch,\n\t\tFeed_Get,\n\t\tFeed_Chat,\n\t}",
				"func FeedPolicies() []reactor.MethodPolicy {\n\treturn nil\n}",
				"func (c *FeedClient) GoGet(",
				"func (c *FeedClient) Watch(req *a.M,",
				"func (c *FeedClient) Chat(opts *calls.StreamOptions,",
			},
			absent: []string{"GoWatch", "GoChat"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := respond(request(t, "", fileWith("a.proto", "example.com/a", `name: "Feed" `+tc.methods)))
			require.Equal(t, []string{"example.com/a/aprpc/a.prpc.go"}, generatedNames(t, resp))
			content := resp.File[0].GetContent()
			for _, want := range tc.want {
				require.Contains(t, content, want)
			}
			for _, absent := range tc.absent {
				require.NotContains(t, content, absent)
			}
		})
	}
}

// TestServiceWithoutMethods checks that a service without methods, beside one with, generates
// nothing: no client that could call nothing, no empty method list.
func TestServiceWithoutMethods(t *testing.T) {
	resp := respond(request(t, "", fileWith("a.proto", "example.com/a", `name: "Empty"`, `name: "Feed" `+unary("Get"))))
	require.Equal(t, []string{"example.com/a/aprpc/a.prpc.go"}, generatedNames(t, resp))
	content := resp.File[0].GetContent()
	require.Contains(t, content, "func NewFeedClient(")
	require.NotContains(t, content, "Empty")
}
