package main

import (
	"path"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/types/descriptorpb"
)

// output is the generated file of one .proto file.
type output struct {
	file        *protogen.File
	importPath  protogen.GoImportPath // of the generated package
	packageName string                // of the generated package
	filename    string
	services    []*service
	packageDoc  bool // the first file of its package in the request carries the package comment
}

// service is one service of a file that declares at least one method, with its generated
// names.
type service struct {
	proto      *protogen.Service
	unary      []*protogen.Method
	streaming  []*protogen.Method // server-streaming, client-streaming and bidirectional
	deprecated bool

	descriptors map[*protogen.Method]string // Service_Method, of every method
	methods     string                      // ServiceMethods
	policies    string                      // ServicePolicies
	client      string                      // ServiceClient
	newClient   string                      // NewServiceClient
}

// generate writes one <base>.prpc.go per file to generate that declares a method, unary or
// streaming, in the package <messages' Go package name><suffix> in a subdirectory of that name
// beside the messages' package. Files with no method produce nothing.
func generate(gen *protogen.Plugin, opts *options) error {
	var outs []*output
	byPackage := make(map[protogen.GoImportPath][]*output)
	for _, f := range gen.Files {
		if !f.Generate {
			continue
		}
		out := plan(f, opts)
		if out == nil {
			continue
		}
		out.packageDoc = len(byPackage[out.importPath]) == 0
		byPackage[out.importPath] = append(byPackage[out.importPath], out)
		outs = append(outs, out)
	}
	for _, out := range outs {
		if out.packageDoc {
			if err := checkNames(byPackage[out.importPath]); err != nil {
				return err
			}
		}
	}
	for _, out := range outs {
		g := gen.NewGeneratedFile(out.filename, out.importPath)
		emitFile(gen, g, out)
		if err := checkImports(g, out); err != nil {
			return err
		}
	}
	return nil
}

// plan returns what f generates, or nil if it declares no method. A service without methods
// generates nothing, not even a client that could call nothing.
func plan(f *protogen.File, opts *options) *output {
	out := &output{
		file:        f,
		packageName: string(f.GoPackageName) + opts.packageSuffix,
	}
	out.importPath = protogen.GoImportPath(path.Join(string(f.GoImportPath), out.packageName))
	out.filename = path.Join(path.Dir(f.GeneratedFilenamePrefix), out.packageName, path.Base(f.GeneratedFilenamePrefix)+".prpc.go")
	for _, s := range f.Services {
		if len(s.Methods) == 0 {
			continue
		}
		svc := &service{
			proto:       s,
			deprecated:  s.Desc.Options().(*descriptorpb.ServiceOptions).GetDeprecated(),
			descriptors: make(map[*protogen.Method]string),
			methods:     s.GoName + "Methods",
			policies:    s.GoName + "Policies",
			client:      s.GoName + "Client",
			newClient:   "New" + s.GoName + "Client",
		}
		for _, m := range s.Methods {
			if streaming(m) {
				svc.streaming = append(svc.streaming, m)
			} else {
				svc.unary = append(svc.unary, m)
			}
			svc.descriptors[m] = s.GoName + "_" + m.GoName
		}
		out.services = append(out.services, svc)
	}
	if len(out.services) == 0 {
		return nil
	}
	return out
}

// streaming reports whether m streams in either direction.
func streaming(m *protogen.Method) bool {
	return m.Desc.IsStreamingClient() || m.Desc.IsStreamingServer()
}

// serverStream reports whether m is server-streaming only: one request, then a stream of
// responses, which reactor.Watch opens. Bidirectional and client-streaming methods are
// opened by reactor.Bidi.
func serverStream(m *protogen.Method) bool {
	return m.Desc.IsStreamingServer() && !m.Desc.IsStreamingClient()
}

// hasStreams reports whether out declares a streaming method.
func (out *output) hasStreams() bool {
	for _, s := range out.services {
		if len(s.streaming) > 0 {
			return true
		}
	}
	return false
}

// methodPath returns the gRPC path of m, "/package.Service/Method".
func methodPath(m *protogen.Method) string {
	return "/" + string(m.Parent.Desc.FullName()) + "/" + string(m.Desc.Name())
}

// idempotent reports whether m's idempotency_level lets gRPC retry it, and the level's name.
func idempotent(m *protogen.Method) (bool, string) {
	level := m.Desc.Options().(*descriptorpb.MethodOptions).GetIdempotencyLevel()
	switch level {
	case descriptorpb.MethodOptions_NO_SIDE_EFFECTS, descriptorpb.MethodOptions_IDEMPOTENT:
		return true, level.String()
	}
	return false, level.String()
}

// goMethod returns the name of the client method of m's callback form: GoGetPlayer for
// GetPlayer.
func goMethod(m *protogen.Method) string { return "Go" + m.GoName }

// goNames lists the Go names of ms: "A", "A and B", "A, B and C".
func goNames(ms []*protogen.Method) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.GoName
	}
	return joinAnd(names)
}

// joinAnd lists names: "a", "a and b", "a, b and c".
func joinAnd(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
