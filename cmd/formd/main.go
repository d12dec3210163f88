// Command formd is a self-hosted form submission server that never loses or
// doubles a submission. Each subcommand lives in its own file.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
)

// command is one subcommand: it parses its own flags from args.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if isHelp(args[0]) || args[0] == "help" {
		// Asked for, help is the answer: on stdout, so that it pipes
		// into less or grep, and success.
		usage(stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "formd: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if asksHelp(args[1:]) {
		// A subcommand's flag set prints its usage where it writes
		// errors and fails with flag.ErrHelp; asked for, it goes to
		// stdout and succeeds.
		cmd.run(args[1:], stdout, stdout)
		return 0
	}
	return cmd.run(args[1:], stdout, stderr)
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// asksHelp says the arguments hold -h or --help before any "--".
func asksHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isHelp(a) {
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "formd — form submissions that arrive exactly once.")
	fmt.Fprintln(w, "\nUsage: formd <command> [flags]   (formd <command> -h for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	names := slices.Sorted(maps.Keys(commands))
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nThe owner's console is at http://ADDR/admin/ on a running server (the first")
	fmt.Fprintln(w, "start prints a one-time setup link for the first account); the JSON admin API")
	fmt.Fprintln(w, "is under /v1/admin/, described at /v1/admin/openapi.json.")
}

// parseFlags parses a subcommand's flags. A wrong flag is told in two
// lines — the error, and where the settings are listed — not followed by
// the whole list (issue 34: 116 lines of usage buried the one that
// mattered); -h or --help prints the list, as before.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		usage()
	default:
		fmt.Fprintf(out, "%s: %v\nRun '%s --help' for its flags and settings.\n", fs.Name(), err, fs.Name())
	}
	return err
}
