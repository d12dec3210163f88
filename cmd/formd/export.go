package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // --zone and the console's zone wherever formd runs (a container may have no zoneinfo)

	"github.com/formd/formd/internal/atomicfile"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/export"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/uploads/links"
)

func init() {
	commands["export"] = command{"export a form's entries: --form ID --format csv|jsonl|xlsx [--with-files] [-o FILE]", exportCmd}
}

func exportCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	formID := fs.String("form", "", "the form to export")
	format := fs.String("format", "csv", "csv, jsonl or xlsx")
	out := fs.String("o", "", "output file (default: standard output)")
	head := fs.String("header", "names", "column headings of csv and xlsx: names (the fields' names) or labels")
	lang := fs.String("lang", "", "with --header labels, the labels' language (such as zh); default: each label's default")
	audience := fs.String("for", "machines", "csv and xlsx for machines (names, codes, UTC; the default) or people (labels and words in --lang, times in --zone to the second, files as name and link, a BOM before a CSV); jsonl is the same for both")
	zone := fs.String("zone", "", "with --for people, the time zone of the times, such as Asia/Shanghai (default: this machine's)")
	withFiles := fs.Bool("with-files", false, "write a zip: the entries (file fields pointing into it) and every file under files/<entry>/")
	loader := config.NewLoader(fs, os.Getenv, append(slices.Clone(config.StorageSettings), "public-url", "link-ttl")...)
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	if *formID == "" {
		fmt.Fprintln(stderr, "formd export: --form ID is required")
		return 2
	}
	if !slices.Contains(export.Formats, *format) {
		fmt.Fprintf(stderr, "formd export: --format %q is not known; use %s\n", *format, strings.Join(export.Formats, ", "))
		return 2
	}
	if *head != "names" && *head != "labels" {
		fmt.Fprintf(stderr, "formd export: --header %q is not known; use names or labels\n", *head)
		return 2
	}
	if *audience != "machines" && *audience != "people" {
		fmt.Fprintf(stderr, "formd export: --for %q is not known; use machines or people\n", *audience)
		return 2
	}
	opts := export.Options{Labels: *head == "labels", Lang: *lang, People: *audience == "people", Zone: time.Local}
	if *zone != "" {
		z, err := time.LoadLocation(*zone)
		if err != nil {
			fmt.Fprintf(stderr, "formd export: --zone %q is not a time zone; use a name such as Asia/Shanghai or UTC\n", *zone)
			return 2
		}
		opts.Zone = z
	}
	c := cli{"formd export", stderr}
	ctx := context.Background()
	cfg, st, code := c.withStore(ctx, loader)
	if code != 0 {
		return code
	}
	defer st.Close()
	reg := form.NewRegistry(st, cfg.Logger(os.Stderr))
	if err := reg.Refresh(ctx); err != nil {
		fmt.Fprintf(stderr, "formd export: %v\n", err)
		return 1
	}
	f := reg.Get(*formID)
	if f == nil {
		fmt.Fprintf(stderr, "formd export: no form %q in the store (--data %s)\n", *formID, cfg.Data)
		return 1
	}
	// File fields carry signed links to download each file from a
	// running server (--public-url, else links relative to it), valid
	// for --link-ttl. People cannot open a relative link: an export for
	// them needs --public-url when the form has files.
	if opts.People && !*withFiles && cfg.PublicURL == "" && hasFileField(f) {
		fmt.Fprintln(stderr, "formd export: --for people needs --public-url (FORMD_PUBLIC_URL), the address people open formd at, to give each file an absolute link; or use --with-files")
		return 2
	}
	secret, err := server.InstallationSecret(ctx, cfg, st)
	if err != nil {
		fmt.Fprintf(stderr, "formd export: %v\n", err)
		return 1
	}
	signer := links.New(secret, cfg.PublicURL, cfg.LinkTTL, time.Now)
	opts.Files = func(ctx context.Context, entryID string) (map[string][]links.File, error) {
		return signer.Files(ctx, st, entryID)
	}
	write := func(w io.Writer) error { return export.Write(ctx, st, f, *format, w, opts) }
	if *withFiles {
		write = zipExport(ctx, cfg, st, f, *format, opts)
	}
	if *out == "" {
		if err := write(stdout); err != nil {
			fmt.Fprintf(stderr, "formd export: %v\n", err)
			return 1
		}
		return 0
	}
	if err := writeAtomic(*out, write); err != nil {
		fmt.Fprintf(stderr, "formd export: %v\n", err)
		return 1
	}
	return 0
}

// writeAtomic writes a file through a temporary one that is fsync'd and
// renamed (package atomicfile), so that a failed export never leaves a
// partial file behind.
func writeAtomic(path string, write func(io.Writer) error) error {
	return atomicfile.Write(path, 0o600, write)
}

// hasFileField says the form has a field of files.
func hasFileField(f *form.Form) bool {
	for _, fd := range f.Fields() {
		if fd.Type == form.TypeFile {
			return true
		}
	}
	return false
}
