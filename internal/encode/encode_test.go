package encode_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/internal/encode"
	"github.com/trixnew/prpc/internal/testpb"
)

// planFor is the plan calls.NewMethod makes for m's type.
func planFor(m proto.Message) encode.Plan { return encode.PlanFor(m.ProtoReflect().Descriptor()) }

// encodeCases are messages of every shape a plan distinguishes, in an order where a reused
// buffer goes from large to small and back.
func encodeCases() []proto.Message {
	st, err := structpb.NewStruct(map[string]any{"a": 1.5, "b": []any{"x", map[string]any{"c": true}}})
	if err != nil {
		panic(err)
	}
	withUnknown := &testpb.EchoRequest{Message: "u"}
	withUnknown.ProtoReflect().SetUnknown(protowire.AppendTag(nil, 99, protowire.VarintType))
	withUnknown.ProtoReflect().SetUnknown(protowire.AppendVarint(withUnknown.ProtoReflect().GetUnknown(), 7))
	return []proto.Message{
		&testpb.EchoRequest{Message: "first", Payload: bytes.Repeat([]byte{9}, 1000), DelayMs: 5}, // flat
		&testpb.EchoRequest{Message: "x"},                                    // smaller: a reused buffer must not leak old bytes
		&testpb.EchoRequest{},                                                // empty
		&testpb.EchoRequest{Payload: bytes.Repeat([]byte{1}, 100<<10)},       // above the kept size
		&testpb.EchoRequest{FailCode: 5, FailMessage: "m", ResponseBytes: 7}, // after a large one
		withUnknown, // unknown fields are kept
		&testpb.EchoResponse{Message: "héllo", Metadata: map[string]string{"x-a": "1"}}, // a map: not flat
		st, // recursive nesting
		wrapperspb.String("w"),
		&descriptorpb.UninterpretedOption_NamePart{NamePart: proto.String("n"), IsExtension: proto.Bool(true)}, // proto2, required set
		&descriptorpb.FieldOptions{Deprecated: proto.Bool(true)},                                               // extension ranges
		dynamicpb.NewMessage((&testpb.EchoRequest{}).ProtoReflect().Descriptor()),                              // no generated fast path
	}
}

func TestPlanEncodesAsProtoMarshal(t *testing.T) {
	for _, plan := range []struct {
		name string
		of   func(proto.Message) encode.Plan
	}{
		{"type's plan", planFor},
		{"zero plan", func(proto.Message) encode.Plan { return encode.Plan{} }},
	} {
		t.Run(plan.name, func(t *testing.T) {
			var buf []byte // reused, as a call record reuses it
			for round := 0; round < 3; round++ {
				for i, m := range encodeCases() {
					want, err := proto.Marshal(m)
					require.NoError(t, err)

					buf, err = plan.of(m).Append(buf, m)
					require.NoError(t, err)
					require.Len(t, buf, proto.Size(m), "msg %d", i)
					if !hasMap(m) { // the order of a map's entries may differ from run to run
						require.True(t, bytes.Equal(want, buf), "msg %d (%T): encoded bytes differ", i, m)
					}

					got := m.ProtoReflect().Type().New().Interface()
					require.NoError(t, proto.Unmarshal(buf, got))
					require.True(t, proto.Equal(m, got), "msg %d (%T)", i, m)
				}
			}
		})
	}
}

// hasMap reports whether m's type is one with a map field, directly or nested.
func hasMap(m proto.Message) bool {
	switch m.(type) {
	case *testpb.EchoResponse, *structpb.Struct:
		return true
	}
	return false
}

func TestPlanRejectsWhatProtoMarshalRejects(t *testing.T) {
	cases := []struct {
		name string
		msg  proto.Message
	}{
		{"invalid UTF-8 in a flat message", &testpb.EchoRequest{Message: "\xff"}},
		{"invalid UTF-8 in a nested message", &testpb.EchoResponse{Metadata: map[string]string{"k": "\xff"}}},
		{"a missing required field", &descriptorpb.UninterpretedOption_NamePart{NamePart: proto.String("n")}},
		{"a missing required field in a nested message", &descriptorpb.UninterpretedOption{
			Name: []*descriptorpb.UninterpretedOption_NamePart{{IsExtension: proto.Bool(false)}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, wantErr := proto.Marshal(tc.msg)
			require.Error(t, wantErr, "proto.Marshal accepts it")

			buf, err := planFor(tc.msg).Append(make([]byte, 0, 64), tc.msg)
			require.Error(t, err)
			require.Empty(t, buf)
			require.Equal(t, 64, cap(buf), "the caller's storage comes back for reuse")

			// The buffer is still usable afterwards.
			good := &testpb.EchoRequest{Message: "ok"}
			buf, err = planFor(good).Append(buf, good)
			require.NoError(t, err)
			want, _ := proto.Marshal(good)
			require.Equal(t, want, buf)
		})
	}
}

func TestPlanReusesTheBuffer(t *testing.T) {
	cases := []proto.Message{
		&testpb.EchoRequest{Message: "flat"},
		&descriptorpb.UninterpretedOption{ // nested, with required fields
			Name:        []*descriptorpb.UninterpretedOption_NamePart{{NamePart: proto.String("n"), IsExtension: proto.Bool(false)}},
			StringValue: []byte("v"),
		},
	}
	for _, m := range cases {
		plan := planFor(m)
		buf := make([]byte, 0, 256)
		allocs := testing.AllocsPerRun(100, func() {
			var err error
			if buf, err = plan.Append(buf, m); err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, allocs, "%T: encoding into a buffer with room allocates", m)
	}
}
