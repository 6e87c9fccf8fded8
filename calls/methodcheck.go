package calls

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// checkRegistered checks the method at path, a valid path, against its service's declaration
// in protoregistry.GlobalFiles: the method exists, is unary, takes Req and returns Resp. It
// returns nil when the service is not registered, and skips the check of a type that has no
// descriptor (an interface or untyped message type). The message types' descriptors are
// looked at only once the service is found, since a generated type's descriptor is not built
// until its package's init runs. Its errors name the path, and for a type mismatch the type
// the service declares and the type given.
func checkRegistered[Req, Resp proto.Message](path string) error {
	return checkRegisteredKind[Req, Resp](path, kindUnary)
}

// methodKind is what a descriptor declares its method to be.
type methodKind uint8

const (
	kindUnary        methodKind = iota // Method
	kindServerStream                   // StreamMethod
	kindClientStream                   // BidiMethod: bidirectional or client-streaming
)

// kindName names a method by whether its client and server stream.
func kindName(client, server bool) string {
	switch {
	case client && server:
		return "bidirectional-streaming"
	case client:
		return "client-streaming"
	case server:
		return "server-streaming"
	}
	return "unary"
}

// checkRegisteredKind is checkRegistered for a descriptor of the given kind: the method must
// be unary for a Method, server-streaming only for a StreamMethod, client-streaming
// (bidirectional or not) for a BidiMethod.
func checkRegisteredKind[Req, Resp proto.Message](path string, kind methodKind) error {
	rest := path[1:]
	slash := strings.IndexByte(rest, '/')
	service, method := protoreflect.FullName(rest[:slash]), protoreflect.Name(rest[slash+1:])

	d, err := protoregistry.GlobalFiles.FindDescriptorByName(service)
	if err != nil {
		return nil // not registered: nothing to check against
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return fmt.Errorf("prpc: method %s: %s is a registered protobuf %s, not a service", path, service, descriptorKind(d))
	}
	md := sd.Methods().ByName(method)
	if md == nil {
		names := make([]string, sd.Methods().Len())
		for i := range names {
			names[i] = string(sd.Methods().Get(i).Name())
		}
		return fmt.Errorf("prpc: method %s: service %s has no method %s (its methods: %s)", path, service, method, strings.Join(names, ", "))
	}
	client, server := md.IsStreamingClient(), md.IsStreamingServer()
	switch kind {
	case kindUnary:
		if client || server {
			return fmt.Errorf("prpc: method %s is %s; calls.Method describes unary methods only "+
				"(calls.StreamMethod a server-streaming one, calls.BidiMethod a bidirectional or client-streaming one)", path, kindName(client, server))
		}
	case kindServerStream:
		if client || !server {
			return fmt.Errorf("prpc: method %s is %s; calls.StreamMethod describes server-streaming methods only", path, kindName(client, server))
		}
	case kindClientStream:
		if !client {
			return fmt.Errorf("prpc: method %s is %s; calls.BidiMethod describes bidirectional and client-streaming methods only", path, kindName(client, server))
		}
	}
	req, resp := messageName[Req](), messageName[Resp]()
	var errs []error
	if want := md.Input().FullName(); req != "" && req != want {
		errs = append(errs, fmt.Errorf("prpc: method %s: request type is %s, the service declares %s", path, req, want))
	}
	if want := md.Output().FullName(); resp != "" && resp != want {
		errs = append(errs, fmt.Errorf("prpc: method %s: response type is %s, the service declares %s", path, resp, want))
	}
	return errors.Join(errs...)
}

// messageName returns the full name of the message type M, or "" when M has no descriptor of
// its own (messageDescriptor).
func messageName[M proto.Message]() protoreflect.FullName {
	if d := messageDescriptor[M](); d != nil {
		return d.FullName()
	}
	return ""
}

// messageDescriptor returns the descriptor of the message type M, or nil when M's nil value
// has none: an interface type such as proto.Message, or an untyped message such as
// *dynamicpb.Message, whose methods panic on a nil receiver.
func messageDescriptor[M proto.Message]() (d protoreflect.MessageDescriptor) {
	var zero M
	if any(zero) == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			d = nil
		}
	}()
	return zero.ProtoReflect().Descriptor()
}

// descriptorKind names the kind of protobuf declaration d is, for error messages.
func descriptorKind(d protoreflect.Descriptor) string {
	switch d := d.(type) {
	case protoreflect.MessageDescriptor:
		return "message"
	case protoreflect.EnumDescriptor:
		return "enum"
	case protoreflect.EnumValueDescriptor:
		return "enum value"
	case protoreflect.FieldDescriptor:
		if d.IsExtension() {
			return "extension"
		}
		return "field"
	case protoreflect.OneofDescriptor:
		return "oneof"
	case protoreflect.MethodDescriptor:
		return "method"
	}
	return "declaration"
}
