package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"strconv"

	"google.golang.org/protobuf/compiler/protogen"
)

// checkNames reports the first pair of generated identifiers that would share a name in the
// package that outs generate into. Every identifier is exported and made of a service's and a
// method's Go names (Service_Method for every method, unary or streaming, ServiceMethods,
// ServicePolicies, ServiceClient, NewServiceClient), so none is a Go keyword or predeclared identifier, and two services of a
// file, or a service's methods, collide only in odd cases: service Foo's method Bar_Baz and
// service Foo_Bar's method Baz, services NewFoo and Foo, methods get_player and GetPlayer.
// Such names are not renamed behind the user's back, since renaming would depend on what else
// the package holds; the error names both and the way out.
func checkNames(outs []*output) error {
	type owner struct{ what, file string }
	owners := make(map[string]owner)
	claim := func(name, what, file string) error {
		if prev, dup := owners[name]; dup {
			return fmt.Errorf("protoc-gen-prpc: %s (%s) and %s (%s) would both be named %s in package %s; rename one of them, or give their files different go_package options",
				prev.what, prev.file, what, file, name, outs[0].packageName)
		}
		owners[name] = owner{what, file}
		return nil
	}
	for _, out := range outs {
		file := out.file.Desc.Path()
		for _, s := range out.services {
			for _, n := range s.names() {
				if err := claim(n.name, n.what, file); err != nil {
					return err
				}
			}
			if err := checkClientMethods(s, file); err != nil {
				return err
			}
		}
	}
	return nil
}

// generatedName is a package-level identifier generated for a service, and what it names.
type generatedName struct{ name, what string }

// names returns the package-level identifiers generated for s, in the order they are
// checked: ServicePolicies only for a service with unary methods.
func (s *service) names() []generatedName {
	full := string(s.proto.Desc.FullName())
	names := []generatedName{{s.methods, "the method list of service " + full}}
	if len(s.unary) > 0 {
		names = append(names, generatedName{s.policies, "the policies of service " + full})
	}
	names = append(names,
		generatedName{s.client, "the client of service " + full},
		generatedName{s.newClient, "the client constructor of service " + full})
	for _, m := range s.proto.Methods {
		names = append(names, generatedName{s.descriptors[m], "the descriptor of method " + string(m.Desc.FullName())})
	}
	return names
}

// checkClientMethods reports two methods of s's client that would share a name: each unary
// method M gives the client M and GoM, each streaming method M gives it M, so a method named
// GoM beside a unary M collides.
func checkClientMethods(s *service, file string) error {
	owners := make(map[string]string)
	for _, m := range s.proto.Methods {
		methods := []struct{ name, what string }{{m.GoName, "the client method of " + string(m.Desc.FullName())}}
		if !streaming(m) {
			methods = append(methods, struct{ name, what string }{goMethod(m), "the callback-form client method of " + string(m.Desc.FullName())})
		}
		for _, c := range methods {
			if prev, dup := owners[c.name]; dup {
				return fmt.Errorf("protoc-gen-prpc: %s and %s (%s) would both be named %s.%s; rename one of the methods",
					prev, c.what, file, s.client, c.name)
			}
			owners[c.name] = c.what
		}
	}
	return nil
}

// checkImports reports an import of g's file whose name is also one of the file's own
// identifiers. protogen names an import after the last element of its path, renaming it only
// to avoid another import or a predeclared identifier, so a message package whose path ends
// in, say, FooClient would shadow service Foo's client.
func checkImports(g *protogen.GeneratedFile, out *output) error {
	content, err := g.Content()
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, out.filename, content, parser.ImportsOnly)
	if err != nil {
		return err
	}
	declared := make(map[string]bool)
	for _, s := range out.services {
		for _, n := range s.names() {
			declared[n.name] = true
		}
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if imp.Name != nil && declared[imp.Name.Name] {
			return fmt.Errorf("protoc-gen-prpc: %s: the import of %s would be named %s, like a generated identifier; give that package a go_package whose last element differs", out.file.Desc.Path(), path, imp.Name.Name)
		}
	}
	return nil
}
