package encode_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/internal/encode"
	"github.com/trixnew/prpc/internal/testpb"
)

// A string field holding invalid UTF-8 fails the encoding with an error naming the field's
// full name, whichever plan encodes it: the flat one-pass plan, the nested plan, or the zero
// Plan's proto.MarshalOptions.
func TestPlanNamesTheFieldWithInvalidUTF8(t *testing.T) {
	nested := &structpb.Struct{Fields: map[string]*structpb.Value{
		"ok": structpb.NewStringValue("fine"),
		"list": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{
			structpb.NewBoolValue(true), structpb.NewStringValue("bad \xff"),
		}}),
	}}
	dynamic := dynamicpb.NewMessage((&testpb.EchoRequest{}).ProtoReflect().Descriptor())
	dynamic.Set(dynamic.Descriptor().Fields().ByName("message"), protoreflect.ValueOfString("\xff"))
	tests := []struct {
		name  string
		msg   proto.Message
		field protoreflect.FullName
		in    string
		want  string
	}{
		{"flat", &testpb.EchoRequest{Message: "ok", FailMessage: "\xc3\x28"}, "prpctest.EchoRequest.fail_message", "",
			"string field prpctest.EchoRequest.fail_message contains invalid UTF-8"},
		{"flat wrapper", wrapperspb.String("\xff"), "google.protobuf.StringValue.value", "",
			"string field google.protobuf.StringValue.value contains invalid UTF-8"},
		{"repeated", &fieldmaskpb.FieldMask{Paths: []string{"a", "b\xff"}}, "google.protobuf.FieldMask.paths", "",
			"string field google.protobuf.FieldMask.paths contains invalid UTF-8"},
		{"map value", &testpb.EchoResponse{Metadata: map[string]string{"k": "\xff"}}, "prpctest.EchoResponse.metadata", "value",
			"string field prpctest.EchoResponse.metadata contains invalid UTF-8 (a map value)"},
		{"map key", &testpb.EchoResponse{Metadata: map[string]string{"\xff": "v"}}, "prpctest.EchoResponse.metadata", "key",
			"string field prpctest.EchoResponse.metadata contains invalid UTF-8 (a map key)"},
		{"nested", nested, "google.protobuf.Value.string_value", "",
			"string field google.protobuf.Value.string_value contains invalid UTF-8"},
	}
	plans := []struct {
		name string
		of   func(proto.Message) encode.Plan
	}{
		{"type's plan", planFor},
		{"zero plan", func(proto.Message) encode.Plan { return encode.Plan{} }},
	}
	for _, plan := range plans {
		for _, tt := range tests {
			t.Run(plan.name+"/"+tt.name, func(t *testing.T) {
				buf, err := plan.of(tt.msg).Append(make([]byte, 0, 64), tt.msg)
				require.Empty(t, buf)
				require.EqualError(t, err, tt.want)
				var ue *encode.UTF8Error
				require.ErrorAs(t, err, &ue)
				require.Equal(t, tt.field, ue.Field)
				require.Equal(t, tt.in, ue.In)
				require.ErrorIs(t, err, proto.Error, "protobuf's error is kept")
				_, marshalErr := proto.Marshal(tt.msg)
				require.Equal(t, marshalErr, errors.Unwrap(err))
			})
		}
		// A message without generated code is encoded by protobuf's reflection, whose error
		// names the field already.
		t.Run(plan.name+"/dynamic", func(t *testing.T) {
			_, err := plan.of(dynamic).Append(nil, dynamic)
			require.ErrorContains(t, err, "prpctest.EchoRequest.message")
		})
	}
}
