package calls_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
)

// streamingFile is a service registered in protoregistry.GlobalFiles by this test only, under
// its own package, with one method of each kind, all on testpb's messages.
var streamingFile = registerFile(&descriptorpb.FileDescriptorProto{
	Name:       proto.String("prpc/calls/methodcheck_test.proto"),
	Package:    proto.String("prpccallstest"),
	Dependency: []string{"internal/testpb/test.proto"},
	Syntax:     proto.String("proto3"),
	Service: []*descriptorpb.ServiceDescriptorProto{{
		Name: proto.String("Kinds"),
		Method: []*descriptorpb.MethodDescriptorProto{
			streamingMethod("Unary", false, false),
			streamingMethod("ServerStream", false, true),
			streamingMethod("ClientStream", true, false),
			streamingMethod("Bidi", true, true),
		},
	}},
})

func streamingMethod(name string, client, server bool) *descriptorpb.MethodDescriptorProto {
	return &descriptorpb.MethodDescriptorProto{
		Name:            proto.String(name),
		InputType:       proto.String(".prpctest.EchoRequest"),
		OutputType:      proto.String(".prpctest.EchoResponse"),
		ClientStreaming: proto.Bool(client),
		ServerStreaming: proto.Bool(server),
	}
}

func registerFile(fdp *descriptorpb.FileDescriptorProto) string {
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		panic(err)
	}
	if err := protoregistry.GlobalFiles.RegisterFile(fd); err != nil {
		panic(err)
	}
	return fd.Path()
}

// declare returns a function that declares a method of types Req and Resp at a path with
// NewMethod, and checks that MustMethod agrees: it panics with the same error, or not at all.
func declare[Req, Resp proto.Message]() func(t *testing.T, path string) error {
	return func(t *testing.T, path string) error {
		m, err := calls.NewMethod[Req, Resp](path)
		if err != nil {
			require.Nil(t, m)
			require.PanicsWithError(t, err.Error(), func() { calls.MustMethod[Req, Resp](path) })
			return err
		}
		require.Equal(t, path, m.Path())
		require.NotPanics(t, func() { calls.MustMethod[Req, Resp](path) })
		return nil
	}
}

func TestNewMethodChecksRegisteredService(t *testing.T) {
	require.NotEmpty(t, streamingFile)
	var (
		echo      = declare[*testpb.EchoRequest, *testpb.EchoResponse]()
		respIsReq = declare[*testpb.EchoRequest, *testpb.EchoRequest]()
		reqIsResp = declare[*testpb.EchoResponse, *testpb.EchoResponse]()
		swapped   = declare[*testpb.EchoResponse, *testpb.EchoRequest]()
		foreign   = declare[*testpb.EchoRequest, *durationpb.Duration]()
		anyReq    = declare[proto.Message, *testpb.EchoResponse]()
		anyReqBad = declare[proto.Message, *testpb.EchoRequest]()
		dynReq    = declare[*dynamicpb.Message, *testpb.EchoResponse]()
	)
	tests := []struct {
		name    string
		declare func(t *testing.T, path string) error
		path    string
		want    []string // substrings of the error; nil: accepted
	}{
		{"registered, matching", echo, testpb.TestService_Echo_FullMethodName, nil},
		{"registered unary of a test file", echo, "/prpccallstest.Kinds/Unary", nil},
		{"wrong response type", respIsReq, "/prpctest.TestService/Echo",
			[]string{"/prpctest.TestService/Echo", "response type is prpctest.EchoRequest", "declares prpctest.EchoResponse"}},
		{"wrong request type", reqIsResp, "/prpctest.TestService/Echo",
			[]string{"/prpctest.TestService/Echo", "request type is prpctest.EchoResponse", "declares prpctest.EchoRequest"}},
		{"both types swapped", swapped, "/prpctest.TestService/Echo",
			[]string{"request type is prpctest.EchoResponse, the service declares prpctest.EchoRequest",
				"response type is prpctest.EchoRequest, the service declares prpctest.EchoResponse"}},
		{"response from another package", foreign, "/prpctest.TestService/Echo",
			[]string{"response type is google.protobuf.Duration", "declares prpctest.EchoResponse"}},
		{"unknown method", echo, "/prpctest.TestService/Other",
			[]string{"/prpctest.TestService/Other", "service prpctest.TestService has no method Other", "its methods: Echo"}},
		{"method name differs in case", echo, "/prpctest.TestService/echo",
			[]string{"has no method echo"}},
		{"server-streaming", echo, "/prpccallstest.Kinds/ServerStream",
			[]string{"/prpccallstest.Kinds/ServerStream", "server-streaming", "unary methods only"}},
		{"client-streaming", echo, "/prpccallstest.Kinds/ClientStream",
			[]string{"/prpccallstest.Kinds/ClientStream", "client-streaming", "unary methods only"}},
		{"bidirectional-streaming", echo, "/prpccallstest.Kinds/Bidi",
			[]string{"/prpccallstest.Kinds/Bidi", "bidirectional-streaming", "unary methods only"}},
		{"service names a message", echo, "/prpctest.EchoRequest/Echo",
			[]string{"/prpctest.EchoRequest/Echo", "prpctest.EchoRequest is a registered protobuf message, not a service"}},
		{"service names a method", echo, "/prpctest.TestService.Echo/Echo",
			[]string{"prpctest.TestService.Echo is a registered protobuf method, not a service"}},
		{"service names a package", echo, "/prpctest/Echo", nil},
		{"unregistered service", respIsReq, "/prpctest.Unregistered/Echo", nil},
		{"unregistered service without package", swapped, "/S/M", nil},
		{"interface request type", anyReq, "/prpctest.TestService/Echo", nil},
		{"interface request type, wrong response", anyReqBad, "/prpctest.TestService/Echo",
			[]string{"response type is prpctest.EchoRequest, the service declares prpctest.EchoResponse"}},
		{"untyped request type", dynReq, "/prpctest.TestService/Echo", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.declare(t, tt.path)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

var lateRuns int

// A service registered after a descriptor was declared, as a generated package's own file is
// registered after that package's variables are initialised, does not affect the descriptor;
// a declaration made after the registration is checked.
func TestNewMethodChecksOnlyOnceRegistered(t *testing.T) {
	lateRuns++ // a package of its own for each run, so that -count=N works
	pkg := fmt.Sprintf("prpccallslate%d", lateRuns)
	path := "/" + pkg + ".Late/Get"
	before, err := calls.NewMethod[*testpb.EchoRequest, *testpb.EchoRequest](path)
	require.NoError(t, err, "not registered yet: accepted")

	registerFile(&descriptorpb.FileDescriptorProto{
		Name:       proto.String(pkg + "/methodcheck_late_test.proto"),
		Package:    proto.String(pkg),
		Dependency: []string{"internal/testpb/test.proto"},
		Syntax:     proto.String("proto3"),
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Late"),
			Method: []*descriptorpb.MethodDescriptorProto{{
				Name:       proto.String("Get"),
				InputType:  proto.String(".prpctest.EchoRequest"),
				OutputType: proto.String(".prpctest.EchoResponse"),
			}},
		}},
	})
	require.Equal(t, path, before.Path())

	_, err = calls.NewMethod[*testpb.EchoRequest, *testpb.EchoRequest](path)
	require.ErrorContains(t, err, "response type is prpctest.EchoRequest, the service declares prpctest.EchoResponse")
	_, err = calls.NewMethod[*testpb.EchoRequest, *testpb.EchoResponse](path)
	require.NoError(t, err)
}
