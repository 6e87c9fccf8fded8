package encode

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/internal/testpb"
)

func TestPlanFor(t *testing.T) {
	cases := []struct {
		msg       proto.Message
		flat      bool
		checkInit bool
	}{
		{&testpb.EchoRequest{}, true, false},
		{wrapperspb.String(""), true, false},
		{&testpb.EchoResponse{}, false, false}, // a map's entries are messages
		{&structpb.Struct{}, false, false},     // recursive, with no required field anywhere
		{&descriptorpb.UninterpretedOption_NamePart{}, true, true},
		{&descriptorpb.UninterpretedOption{}, false, true}, // a required field one level down
		{&descriptorpb.FieldOptions{}, false, true},        // extensions may be anything
	}
	for _, tc := range cases {
		t.Run(string(tc.msg.ProtoReflect().Descriptor().FullName()), func(t *testing.T) {
			p := PlanFor(tc.msg.ProtoReflect().Descriptor())
			require.Equal(t, Plan{direct: true, flat: tc.flat, checkInit: tc.checkInit}, p)
		})
	}
	require.Equal(t, Plan{}, PlanFor(nil))
}
