package main

import (
	"fmt"
	"strconv"
)

// defaultPackageSuffix is the default of the package_suffix option.
const defaultPackageSuffix = "prpc"

// options are the generator's own options, given as --prpc_opt=name=value (protoc) or in
// opt: (buf). protogen handles the options every protoc-gen-go plugin takes (paths, module,
// M…) before they reach set.
type options struct {
	// packageSuffix names the generated package: the messages' Go package name followed by
	// it, in a subdirectory of that name beside the messages' package.
	packageSuffix string
}

func defaultOptions() *options { return &options{packageSuffix: defaultPackageSuffix} }

// set applies one option; protogen calls it for each option it does not know itself.
func (o *options) set(name, value string) error {
	switch name {
	case "package_suffix":
		if !validSuffix(value) {
			return fmt.Errorf("protoc-gen-prpc: option package_suffix is %s; must be one or more lowercase letters, digits or '_' (default %q): the generated package cannot be the messages' own, where its names (ServiceClient, NewServiceClient) would collide with protoc-gen-go-grpc's and the servers that share the messages would import prpc",
				strconv.Quote(value), defaultPackageSuffix)
		}
		o.packageSuffix = value
		return nil
	default:
		return fmt.Errorf("protoc-gen-prpc: unknown option %q; the options are package_suffix and those of every protoc-gen-go plugin (paths, module, M<file>=<import path>)", name)
	}
}

// validSuffix reports whether s is a non-empty run of lowercase letters, digits and '_', so
// that appended to a Go package name it gives one.
func validSuffix(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
