package calls

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/callcore"
)

// Descriptor is what every *Method is, whatever its message types: a value that names one
// unary gRPC method. It is sealed: only *Method implements it. Use it to list methods, for
// example in reactor.Config.Methods.
type Descriptor interface {
	// Path returns the full method path, "/package.Service/Method".
	Path() string
	descriptor() *callcore.Ops
}

// Method describes one unary gRPC method whose request type is Req and response type is
// Resp, both generated protobuf message pointer types. A Method is immutable and safe for
// concurrent use; declare each one once and share it.
type Method[Req, Resp proto.Message] callcore.Method[Req, Resp]

// NewMethod returns the descriptor of the method at path, which must have the form
// "/Service/Method" or "/package.Service/Method": the service segment starts with a letter or
// '_' and continues with letters, digits, '_' or '.'; the method segment starts with a letter
// or '_' and continues with letters, digits or '_'. Name the path with the constant the gRPC
// code generator writes for it, <Service>_<Method>_FullMethodName. Resp must be a concrete
// generated message type, since prpc makes a new one for every response.
//
// When the path's service is registered in protoregistry.GlobalFiles, as it is whenever its
// generated package is linked into the program, NewMethod checks the method against it: the
// method must exist, be unary (neither client- nor server-streaming), take Req and return
// Resp, compared by full message name. A mismatch is an error that names the path, the type
// the service declares and the type given; unchecked, a response would be decoded into the
// wrong type by field number and come out silently wrong. A service segment that names a
// registered declaration other than a service (a message, say) is an error too. A request type
// without a descriptor of its own (proto.Message, *dynamicpb.Message) is not checked. A
// service that is not registered is accepted unchecked, and so is a descriptor declared at
// package level inside the service's own generated package, whose variables are initialised
// before that package registers its file. The check costs one registry lookup, once per
// declaration.
func NewMethod[Req, Resp proto.Message](path string) (*Method[Req, Resp], error) {
	if err := validatePath(path); err != nil {
		return nil, err
	}
	var zero Resp
	if any(zero) == nil {
		return nil, fmt.Errorf("prpc: method %s: response type must be a concrete generated message type, not an interface", path)
	}
	if err := checkRegistered[Req, Resp](path); err != nil {
		return nil, err
	}
	respType := zero.ProtoReflect().Type()
	m := (*Method[Req, Resp])(callcore.NewMethod[Req, Resp](callcore.Ops{
		Path:        path,
		NewResponse: func() proto.Message { return respType.New().Interface() },
	}))
	return m, nil
}

// MustMethod is like NewMethod but panics with NewMethod's error if path is invalid or does
// not match the registered service's declaration. It suits package-level declarations.
func MustMethod[Req, Resp proto.Message](path string) *Method[Req, Resp] {
	m, err := NewMethod[Req, Resp](path)
	if err != nil {
		panic(err)
	}
	return m
}

// Path returns the full method path, "/package.Service/Method".
func (m *Method[Req, Resp]) Path() string { return m.core().Ops().Path }

// Service returns the fully qualified service name, "package.Service".
func (m *Method[Req, Resp]) Service() string {
	p := m.core().Ops().Path[1:]
	return p[:strings.IndexByte(p, '/')]
}

// Name returns the method name, the part after the last '/'.
func (m *Method[Req, Resp]) Name() string {
	return m.core().Ops().Path[strings.LastIndexByte(m.core().Ops().Path, '/')+1:]
}

// String returns the method path.
func (m *Method[Req, Resp]) String() string { return m.core().Ops().Path }

func (m *Method[Req, Resp]) descriptor() *callcore.Ops { return m.core().Ops() }

// core returns the descriptor's state.
func (m *Method[Req, Resp]) core() *callcore.Method[Req, Resp] {
	return (*callcore.Method[Req, Resp])(m)
}

// validatePath reports whether path is a valid gRPC method path, "/[package.]Service/Method",
// with an error that quotes it.
func validatePath(path string) error {
	if !validPath(path) {
		return fmt.Errorf("prpc: invalid gRPC method path %q: expected /package.Service/Method", path)
	}
	return nil
}

func validPath(path string) bool {
	if len(path) < 4 || path[0] != '/' {
		return false
	}
	rest := path[1:]
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		return false
	}
	return validSegment(rest[:slash], true) && validSegment(rest[slash+1:], false)
}

// validSegment reports whether s starts with a letter or '_' and continues with letters,
// digits, '_' and, when dots is set, '.'.
func validSegment(s string, dots bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && '0' <= c && c <= '9':
		case i > 0 && dots && c == '.':
		default:
			return false
		}
	}
	return true
}
