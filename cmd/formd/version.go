package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func init() {
	commands["version"] = command{"print the version", func(_ []string, stdout, _ io.Writer) int {
		rev := ""
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && len(s.Value) >= 12 {
					rev = " (" + s.Value[:12] + ")"
				}
			}
			fmt.Fprintf(stdout, "formd %s%s %s\n", version, rev, bi.GoVersion)
			return 0
		}
		fmt.Fprintf(stdout, "formd %s\n", version)
		return 0
	}}
}
