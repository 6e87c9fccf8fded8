package main

import (
	"strings"
	"testing"
)

func TestCPUModel(t *testing.T) {
	for _, c := range []struct{ cpuinfo, want string }{
		{"processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: other\n", "AMD EPYC 7B13"},
		{"processor\t: 0\nCPU part\t: 0xd0c\n", "unknown CPU"},
		{"", "unknown CPU"},
	} {
		if got := cpuModel(c.cpuinfo); got != c.want {
			t.Errorf("cpuModel(%q) = %q, want %q", c.cpuinfo, got, c.want)
		}
	}
}

func TestOSName(t *testing.T) {
	for _, c := range []struct{ osRelease, want string }{
		{"NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n", "Debian GNU/Linux 12 (bookworm)"},
		{"PRETTY_NAME='Alpine Linux v3.20'\n", "Alpine Linux v3.20"},
		{"PRETTY_NAME=Plain\n", "Plain"},
		{"NAME=NoPretty\n", ""},
		{"", ""},
	} {
		if got := osName(c.osRelease); got != c.want {
			t.Errorf("osName(%q) = %q, want %q", c.osRelease, got, c.want)
		}
	}
}

// TestGRPCVersion checks that the version comes from the build information, which a test
// binary has too, in the form of a module version.
func TestGRPCVersion(t *testing.T) {
	if v := grpcVersion(); !strings.HasPrefix(v, "v1.") {
		t.Errorf("grpcVersion() = %q, want a v1 module version", v)
	}
}
