package main

import (
	"fmt"
	"go/token"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
)

// emitPackageDoc writes the package comment: a manual for the package's services, an
// introduction and a section each on calls, streams, policies and tests, those on calls,
// policies and tests only if a service has unary methods and that on streams only if one has
// streaming methods.
func emitPackageDoc(gen *protogen.Plugin, g *protogen.GeneratedFile, out *output) {
	d := newPackageDoc(gen, out)
	paras := []any{d.intro()}
	if d.first != nil {
		paras = append(paras, d.calls()...)
	}
	if d.streaming != nil {
		paras = append(paras, d.streams()...)
	}
	if d.first != nil {
		paras = append(paras, d.policies()...)
		paras = append(paras, d.tests()...)
	}
	writeDoc(g, paras...)
}

// packageDoc holds what the sections of the package comment name.
type packageDoc struct {
	gen       *protogen.Plugin
	out       *output          // the first file of the package, which carries the comment
	pkg       string           // the generated package's name
	names     []string         // the full names of the services
	first     *service         // the first service with unary methods, whose names the examples use, or nil
	m         *protogen.Method // first's first unary method, which the examples call
	req, resp string           // m's request and response messages, as messageName writes them

	streaming *service         // the first service with streaming methods, or nil
	watch     *protogen.Method // its first server stream, or nil
	bidi      *protogen.Method // its first bidirectional or client stream, or nil
}

// newPackageDoc returns what the package comment of out's package names: its examples call the
// first unary method of the first service that has one, and open the first streams of the
// first service that has streaming methods.
func newPackageDoc(gen *protogen.Plugin, out *output) *packageDoc {
	d := &packageDoc{gen: gen, out: out, pkg: out.packageName}
	for _, s := range out.services {
		d.names = append(d.names, string(s.proto.Desc.FullName()))
		if d.first == nil && len(s.unary) > 0 {
			d.first = s
		}
		if d.streaming == nil && len(s.streaming) > 0 {
			d.streaming = s
		}
	}
	if d.first != nil {
		d.m = d.first.unary[0]
		d.req, d.resp = messageName(gen, d.m.Input), messageName(gen, d.m.Output)
	}
	if d.streaming != nil {
		for _, m := range d.streaming.streaming {
			if serverStream(m) && d.watch == nil {
				d.watch = m
			}
			if !serverStream(m) && d.bidi == nil {
				d.bidi = m
			}
		}
	}
	return d
}

// intro returns the paragraph that opens the package comment: what the package holds and
// where it comes from.
func (d *packageDoc) intro() string {
	var holds string
	switch {
	case d.first == nil:
		holds = "It holds typed method descriptors and a client with one method per streaming RPC."
	case d.streaming == nil:
		holds = "It holds typed method descriptors, a client with one method per unary RPC, and the " +
			"method policies that the .proto declares."
	default:
		holds = "It holds typed method descriptors, a client with methods that make unary calls and " +
			"methods that open streams, and the method policies that the .proto declares."
	}
	return "Package " + d.pkg + " calls " + joinAnd(d.names) + " with prpc (github.com/trixnew/prpc), from a game " +
		"loop or another goroutine that must never block. " + holds + " " +
		"protoc-gen-prpc generated it from " + d.out.file.Desc.Path() + "; the messages are in package " +
		string(d.out.file.GoPackageName) + " (" + string(d.out.file.GoImportPath) + ")."
}

// calls returns the section on making calls: a reactor and a client, and the forms of a
// client method.
func (d *packageDoc) calls() []any {
	first, m := d.first, d.m
	example := fmt.Sprintf(`	r, err := reactor.New(reactor.Config{
		Target:      "dns:///backend.internal:50051",
		Credentials: reactor.Insecure(),
		Methods:     %[1]s.%[2]s(),
		Policies:    %[1]s.%[3]s(),
	})
	…
	client := %[1]s.%[4]s(r)
	client.%[5]s(&%[6]s{…}, nil).
		Then(func(resp *%[7]s) { … }).
		OnError(func(err error) { … })
	client.%[8]s(&%[6]s{…}, nil, func(resp *%[7]s, err error) { … })`, d.pkg, first.methods, first.policies, first.newClient, m.GoName, d.req, d.resp, goMethod(m))
	streams := ""
	if d.streaming != nil {
		streams = " Streaming methods have no Go form; their descriptors serve reactor.Watch and " +
			"reactor.Bidi, and reactor.Config.Methods: see Streams."
	}
	return []any{
		"# Calls",
		"A reactor runs the calls and a client names them:",
		example,
		"A client method submits its call and returns the call's promise at once; it never blocks and " +
			"does no network I/O. The promise's callbacks run on the goroutine that calls " +
			"r.Tick(budget), once per server tick, so they may touch game state without locks. Its " +
			"callback form, prefixed with Go (" + goMethod(m) + "), takes one callback that gets the " +
			"response or the error, and makes no promise: the cheapest way to make a call. Build a fresh " +
			"request for every call: the call owns it until it settles, and a request changed meanwhile " +
			"may be sent with its new values. The " +
			"last argument, a *calls.Options, sets the call's timeout, metadata and other options; nil " +
			"means the defaults. Each unary method also has a descriptor, such as " + first.descriptors[m] +
			", for reactor.Call, reactor.Config.Methods and package reactortest." + streams,
	}
}

// streams returns the section on streams: opening one with a client's streaming method, the
// handler and the handle, with an example for the first server stream and the first
// bidirectional or client stream of the first service that has streaming methods.
func (d *packageDoc) streams() []any {
	s := d.streaming
	intro := "A client opens streams as it makes calls:"
	if d.first == nil {
		intro = "A reactor runs the streams and a client opens them:"
	}
	var example []string
	if d.first == nil {
		example = append(example, fmt.Sprintf(`	r, err := reactor.New(reactor.Config{
		Target:      "dns:///backend.internal:50051",
		Credentials: reactor.Insecure(),
		Methods:     %[1]s.%[2]s(),
	})
	…`, d.pkg, s.methods))
	}
	client := "client"
	if s != d.first {
		client = lowerFirst(s.proto.GoName)
		if client == "client" || client == "r" || client == "stream" || client == "bidi" || !token.IsIdentifier(client) || token.IsKeyword(client) {
			client = "streams"
		}
		example = append(example, fmt.Sprintf("\t%s := %s.%s(r)", client, d.pkg, s.newClient))
	}
	handler := func(m *protogen.Method) string {
		return fmt.Sprintf("calls.StreamHandler[*%s, *%s]", messageName(d.gen, m.Input), messageName(d.gen, m.Output))
	}
	var text []string
	text = append(text, "A streaming method opens its stream and returns its handle at once; like a call, it "+
		"never blocks and does no network I/O. The handler's OnMessage runs for each message the server "+
		"sends, in the order received, on the goroutine that calls r.Tick(budget), under its budget and "+
		"interleaved with the calls' callbacks; OnEnd runs once, last, with nil if the server ended the "+
		"stream with OK and otherwise with the error that ended it first. The handle's Cancel ends the "+
		"stream; reactor.Reactor.CloseStreams, Shutdown and Close end them all. At most "+
		"StreamOptions.MaxWaiting messages wait for Tick: while that many wait, prpc stops reading "+
		"the stream and HTTP/2's flow control holds the server back; StreamOptions.KeepLatest keeps only "+
		"the newest instead, for a stream of states. A streaming method's last two arguments are a "+
		"*calls.StreamOptions, nil for the defaults, and the handler; it has no Go form, since there is "+
		"no promise to save.")
	if m := d.watch; m != nil {
		example = append(example, fmt.Sprintf(`	stream := %[1]s.%[2]s(&%[3]s{…}, nil, %[4]s{
		OnMessage: func(msg *%[5]s) { … },
		OnEnd:     func(err error) { … },
	})
	…
	stream.Cancel()`, client, m.GoName, messageName(d.gen, m.Input), handler(m), messageName(d.gen, m.Output)))
	}
	if m := d.bidi; m != nil {
		example = append(example, fmt.Sprintf(`	bidi := %[1]s.%[2]s(nil, %[3]s{
		OnMessage: func(msg *%[4]s) { … },
		OnEnd:     func(err error) { … },
	})
	if err := bidi.Send(&%[5]s{…}); err != nil { … } // never blocks
	bidi.CloseSend()`, client, m.GoName, handler(m), messageName(d.gen, m.Output), messageName(d.gen, m.Input)))
		text = append(text, "A bidirectional or client stream's method takes no request: the handle's Send "+
			"queues each message for a goroutine of the stream's, which encodes it and hands it to gRPC, "+
			"and fails at once with StreamOptions.MaxSendQueue messages queued or once the stream is done; "+
			"CloseSend closes the client's side. A client stream's one response is its one message.")
	}
	return []any{
		"# Streams",
		intro,
		strings.Join(example, "\n"),
		strings.Join(text, " "),
	}
}

// lowerFirst returns s with its first letter in lower case.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// policies returns the section on method policies: what a policies function returns and how
// to change it, with an example that sets a timeout and, if the service has a method that is
// not idempotent, makes the first such method critical.
func (d *packageDoc) policies() []any {
	first := d.first
	example := fmt.Sprintf(`	policies := %[1]s.%[2]s()
	for i := range policies {
		policies[i].Timeout = 200 * time.Millisecond
	}`, d.pkg, first.policies)
	for _, m := range first.unary {
		if ok, _ := idempotent(m); !ok {
			example += fmt.Sprintf("\n\tpolicies = append(policies, reactor.MethodPolicy{Method: %s.%s, Critical: true})", d.pkg, first.descriptors[m])
			break
		}
	}
	return []any{
		"# Policies",
		"Each service's policies function, such as " + first.policies + ", returns a reactor.MethodPolicy " +
			"with Idempotent set for each method whose idempotency_level is NO_SIDE_EFFECTS or " +
			"IDEMPOTENT, so that gRPC retries its calls as reactor.Config.Retry says; other methods are " +
			"never retried. The slice is new on each call: change an entry to set a method's Timeout, " +
			"WaitForReady or Critical, or to coalesce (Coalesce) or hedge (Hedge) the calls of an " +
			"idempotent read, which no .proto option says; append entries for other methods, but give " +
			"no method a second entry, which reactor.New rejects:",
		example,
	}
}

// tests returns the section on testing code that uses a client: a reactor over a
// reactortest.Backend.
func (d *packageDoc) tests() []any {
	first, m := d.first, d.m
	example := fmt.Sprintf(`	b := reactortest.NewBackend()
	reactortest.Handle(b, %[1]s.%[2]s, func(ctx context.Context, req *%[3]s) (*%[4]s, error) {
		return &%[4]s{…}, nil
	})
	r := reactortest.NewReactor(t, b, reactor.Config{Methods: %[1]s.%[5]s(), Policies: %[1]s.%[8]s()})
	client := %[1]s.%[6]s(r)
	… // the code under test calls client.%[7]s
	reactortest.Flush(t, r) // ticks until every callback has run`, d.pkg, first.descriptors[m], d.req, d.resp, first.methods, first.newClient, m.GoName, first.policies)
	return []any{
		"# Tests",
		"The clients are concrete types, not interfaces: only package reactor can make a promise, so " +
			"a fake client could not return one. To test code that uses a client, give the client a " +
			"reactor whose Config.Conn is a reactortest.Backend, which answers each call in process: " +
			"with the fake server that the registration function protoc-gen-go-grpc generates takes " +
			"(the Backend is a grpc.ServiceRegistrar), or with one function per method registered by " +
			"reactortest.Handle. The reactor takes the Config production runs with, policies included: " +
			"the Backend retries the calls of idempotent methods as gRPC would.",
		example,
	}
}

// messageName returns the name of message m as the package documentation writes it, qualified
// by its Go package name.
func messageName(gen *protogen.Plugin, m *protogen.Message) string {
	return string(gen.FilesByPath[m.Desc.ParentFile().Path()].GoPackageName) + "." + m.GoIdent.GoName
}
