package calls_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
)

// pathRE is the reference grammar of a method path that ValidatePath implements by hand.
var pathRE = regexp.MustCompile(`^/[A-Za-z_][A-Za-z0-9_.]*/[A-Za-z_][A-Za-z0-9_]*$`)

// FuzzValidatePath checks that ValidatePath never panics and accepts exactly the paths the
// reference regexp matches; that its error quotes the path; and that NewMethod agrees with it
// and splits an accepted path into its service and method. The seed corpus (f.Add below and
// testdata/fuzz/FuzzValidatePath) runs in every go test.
func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{
		"/S/M",
		"/pkg.Service/Method",
		"/prpctest.TestService/Echo",
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
		if (merr == nil) != (err == nil) {
			t.Fatalf("NewMethod(%q) error %v, ValidatePath error %v", path, merr, err)
		}
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(path)) {
				t.Fatalf("error %q does not quote the path %q", err, path)
			}
			return
		}
		if got := "/" + m.Service() + "/" + m.Name(); got != path || m.Path() != path {
			t.Fatalf("NewMethod(%q): Path %q, Service %q, Name %q", path, m.Path(), m.Service(), m.Name())
		}
	})
}
