package calls_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
)

// pathRE is the reference grammar of a method path that ValidatePath implements by hand.
var pathRE = regexp.MustCompile(`^/[A-Za-z_][A-Za-z0-9_.]*/[A-Za-z_][A-Za-z0-9_]*$`)

// FuzzValidatePath checks that ValidatePath never panics and accepts exactly the paths the
// reference regexp matches; that its error quotes the path; that NewMethod refuses what it
// refuses, with the same error, and accepts the rest unless the service segment names a
// registered declaration; and that NewMethod splits an accepted path into its service and
// method. The seed corpus (f.Add below and testdata/fuzz/FuzzValidatePath) runs in every go
// test.
func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{
		"/S/M",
		"/pkg.Service/Method",
		"/prpctest.TestService/Echo",
		"/prpctest.TestService/Other",
		"/prpctest.EchoRequest/Echo",
		"/_/_",
		"/a.b.C_d/_m1",
		"",
		"/",
		"//",
		"/a/",
		"//M",
		"/S/M/",
		"/S/M/X",
		"S/M",
		"/1S/M",
		"/S/1M",
		"/.S/M",
		"/S./M", // trailing dot: the grammar allows it
		"/S/M.x",
		"/S /M",
		"/S/M\n",
		"/S/M\x00",
		"/Sé/M",
		"/S/\xff",
		"/S\\M",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		err := calls.ValidatePath(path)
		if want := pathRE.MatchString(path); (err == nil) != want {
			t.Fatalf("ValidatePath(%q) = %v; reference regexp match = %v", path, err, want)
		}
		m, merr := calls.NewMethod[*testpb.EchoRequest, *testpb.EchoResponse](path)
		if err != nil {
			if merr == nil || merr.Error() != err.Error() {
				t.Fatalf("NewMethod(%q) error %v, ValidatePath error %v", path, merr, err)
			}
			if !strings.Contains(err.Error(), strconv.Quote(path)) {
				t.Fatalf("error %q does not quote the path %q", err, path)
			}
			return
		}
		if merr != nil {
			// A valid path is refused only when its service segment names a registered
			// declaration that does not declare this method; the error names the path.
			service := path[1:strings.LastIndexByte(path, '/')]
			if _, ferr := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service)); ferr != nil {
				t.Fatalf("NewMethod(%q) of an unregistered service: %v", path, merr)
			}
			if !strings.Contains(merr.Error(), path) {
				t.Fatalf("error %q does not name the path %q", merr, path)
			}
			return
		}
		if got := "/" + m.Service() + "/" + m.Name(); got != path || m.Path() != path {
			t.Fatalf("NewMethod(%q): Path %q, Service %q, Name %q", path, m.Path(), m.Service(), m.Name())
		}
	})
}
