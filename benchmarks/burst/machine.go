package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"google.golang.org/grpc"
)

// Machine describes where the run happened. Every field is read from the running system; a
// field it could not read is empty.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	GOOS     string `json:"goos"`
	GOARCH   string `json:"goarch"`
	// Kernel is the kernel release and OSName the distribution's name (Linux).
	Kernel      string `json:"kernel,omitempty"`
	OSName      string `json:"os_name,omitempty"`
	GoVersion   string `json:"go_version"`
	GRPCVersion string `json:"grpc_version"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	// LoadStart and LoadEnd are the 1, 5 and 15-minute load averages when the run started
	// and ended (Linux), since other work on the machine skews every figure.
	LoadStart string `json:"load_average_start,omitempty"`
	LoadEnd   string `json:"load_average_end,omitempty"`
}

// machine describes this machine, with the load average as the run starts.
func machine() Machine {
	return Machine{
		CPUs:        runtime.NumCPU(),
		CPUModel:    cpuModel(readFile("/proc/cpuinfo")),
		GOOS:        runtime.GOOS,
		GOARCH:      runtime.GOARCH,
		Kernel:      strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		OSName:      osName(readFile("/etc/os-release")),
		GoVersion:   runtime.Version(),
		GRPCVersion: grpcVersion(),
		GOMAXPROCS:  runtime.GOMAXPROCS(0),
		LoadStart:   loadAverage(),
	}
}

// readFile returns the contents of path, or "" if it cannot be read.
func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// cpuModel returns the first "model name" of cpuinfo, the contents of /proc/cpuinfo, or
// "unknown CPU".
func cpuModel(cpuinfo string) string {
	for line := range strings.Lines(cpuinfo) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// osName returns PRETTY_NAME from osRelease, the contents of /etc/os-release, or "".
func osName(osRelease string) string {
	for line := range strings.Lines(osRelease) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// grpcVersion returns the version of the grpc-go module this binary was built with, from its
// build information, or grpc.Version if the build information does not list it.
func grpcVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path != "google.golang.org/grpc" {
				continue
			}
			if d.Replace != nil {
				d = d.Replace
			}
			if d.Version != "" && d.Version != "(devel)" {
				return d.Version
			}
		}
	}
	return "v" + grpc.Version
}

// loadAverage returns the 1, 5 and 15-minute load averages from /proc/loadavg, or "".
func loadAverage() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
