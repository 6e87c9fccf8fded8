package main

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/compiler/protogen"
)

// emitPackageDoc writes the package comment: a manual for the package's services, an
// introduction and a section each on calls, policies and tests.
func emitPackageDoc(gen *protogen.Plugin, g *protogen.GeneratedFile, out *output) {
	d := newPackageDoc(gen, out)
	writeDoc(g, slices.Concat([]any{d.intro()}, d.calls(), d.policies(), d.tests())...)
}

// packageDoc holds what the sections of the package comment name.
type packageDoc struct {
	out       *output          // the first file of the package, which carries the comment
	pkg       string           // the generated package's name
	names     []string         // the full names of the services with unary methods
	first     *service         // the first of them, whose names the examples use
	m         *protogen.Method // first's first unary method, which the examples call
	req, resp string           // m's request and response messages, as messageName writes them
}

// newPackageDoc returns what the package comment of out's package names: its examples call the
// first unary method of the first service that has one.
func newPackageDoc(gen *protogen.Plugin, out *output) *packageDoc {
	d := &packageDoc{out: out, pkg: out.packageName}
	for _, s := range out.services {
		if len(s.unary) == 0 {
			continue
		}
		d.names = append(d.names, string(s.proto.Desc.FullName()))
		if d.first == nil {
			d.first = s
		}
	}
	d.m = d.first.unary[0]
	d.req, d.resp = messageName(gen, d.m.Input), messageName(gen, d.m.Output)
	return d
}

// intro returns the paragraph that opens the package comment: what the package holds and
// where it comes from.
func (d *packageDoc) intro() string {
	return "Package " + d.pkg + " calls " + joinAnd(d.names) + " with prpc (github.com/trixnew/prpc), from a game " +
		"loop or another goroutine that must never block. It holds typed method descriptors, a " +
		"client with one method per unary RPC, and the method policies that the .proto declares. " +
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
			", for reactor.Call, reactor.Config.Methods and package reactortest. Streaming methods have " +
			"neither: prpc makes unary calls only.",
	}
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
