package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/server"
)

// The release is stamped at build time with
// -ldflags "-X github.com/formd/formd/internal/release.version=v1.2.3"
// (package release).

func init() {
	commands["version"] = command{"print the version, the commit and the schema of the data (--data, --store)", versionCmd}
}

func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	loader := config.NewLoader(fs, os.Getenv, config.StorageSettings...)
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	fmt.Fprintf(stdout, "formd %s\n", release.Version())
	commit := release.Commit()
	if commit == "" {
		// go install module@version and -buildvcs=false record none
		// (issue 34); scripts/release.sh and scripts/image.sh stamp it.
		commit = "unknown (not recorded by this build: build with -ldflags \"-X github.com/formd/formd/internal/release.commit=$(git rev-parse --short=12 HEAD)\", as scripts/release.sh does)"
	}
	fmt.Fprintf(stdout, "commit %s\n", commit)
	fmt.Fprintf(stdout, "go     %s\n", runtime.Version())
	cfg, code := cli{"formd version", stderr}.settings(loader)
	if code != 0 {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	schemas, err := server.SchemaVersions(ctx, cfg)
	code = 0
	for _, s := range schemas {
		fmt.Fprintf(stdout, "%-7s %s\n", s.What, describeSchema(s))
	}
	if err != nil {
		fmt.Fprintf(stderr, "formd version: %v\n", err)
		code = 1
	}
	return code
}

// describeSchema says what a file or database holds, in one line.
func describeSchema(s release.Schema) string {
	switch {
	case s.Empty:
		return fmt.Sprintf("%s: no data yet (this binary makes schema %d)", s.Where, s.Known)
	case s.TooNew():
		return fmt.Sprintf("%s: schema %d, NEWER than this binary knows (%d): %v", s.Where, s.Version, s.Known, &release.TooNewError{Schema: s})
	}
	by := s.WrittenBy
	if by == "" {
		by = "a release before the record began"
	}
	upgrade := ""
	if s.Version < s.Known {
		upgrade = fmt.Sprintf("; this binary upgrades it to %d when it opens it", s.Known)
	}
	return fmt.Sprintf("%s: schema %d, last written by formd %s%s", s.Where, s.Version, by, upgrade)
}
