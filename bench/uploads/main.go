// Command uploads is the uploads benchmark of BENCHMARKS.md: how fast
// formd takes files over tus against tusd — the tus project's own
// server, built from its module at the version formd embeds — and
// against writing the same bytes to the same disk with dd conv=fsync;
// how much memory each server holds while files arrive, for small and
// large files; and how long a client takes to resume an upload dropped
// half way.
//
// For each size of -sizes (10 MiB and 100 MiB), with a new formd and a
// new tusd whose files are on the file system of -dir:
//
//   - Throughput: for each N of -n (1 and 20), N uploads at once, each a
//     tus creation and one PATCH of the whole file, timed from the first
//     request to the last 204. formd answers a PATCH once every byte is
//     fsync'd, hashed (SHA-256), its type sniffed and the upload recorded
//     complete in its store. tusd's filestore never fsyncs, so tusd is
//     measured twice: as it is ("tusd"), and with the durability made
//     equal ("tusd+fsync"): after the 201 the harness fsyncs the new
//     bytes file, its .info and the directory, after the 204 the bytes
//     file — what formd does before it answers each — and counts that
//     time as tusd's. Against N dd if=SRC of=FILE bs=1M conv=fsync at
//     once, the disk's reference. Each round runs formd, tusd, tusd+fsync
//     and dd, starting one further along each round, with a sync(2)
//     before each batch and the batch's uploads deleted (tus DELETE)
//     after it, untimed. Every upload has bytes of its own (formd keeps
//     identical bytes once).
//   - Resume: an upload whose connection is cut after half of its bytes;
//     the time from the cut to the HEAD's offset, and from there to the
//     204 of the rest, for each server.
//   - Memory: each server's VmRSS read from /proc every 20 ms through
//     the size's runs, and its VmHWM after them (a new process for each
//     size, so each size's figures are its own).
//
// Then, unless -big-n is 0, each server takes -big-n uploads of
// -big-size at once, each streamed from a generator (the client never
// holds a file), with its VmRSS sampled the same way.
//
// Usage:
//
//	go build -o /tmp/formd ./cmd/formd
//	# tusd is built with go install at the version /tmp/formd embeds (or give -tusd)
//	go run ./bench/uploads -formd /tmp/formd -dir /var/tmp/formd-bench -rounds 5
//	# tiny, to see that it runs: a few seconds
//	go run ./bench/uploads -formd /tmp/formd -rounds 1 -sizes 1MiB -big-n 0
//	# the same with the bytes in a bucket (scripts/s3server.sh start DIR prints the variables): no tusd then
//	go run ./bench/uploads -formd /tmp/formd -dir /var/tmp/formd-bench -uploads "$FORMD_TEST_S3_URL"
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/formd/formd/bench/proc"
	"github.com/formd/formd/internal/form"
)

// The names of what a round runs, in the report's order.
const (
	nameFormd     = "formd"
	nameTusd      = "tusd"
	nameTusdFsync = "tusd+fsync"
	nameDD        = "dd conv=fsync"
	namePut       = "PUT to the bucket"
)

type key struct {
	size int64
	n    int
	name string
}

func main() {
	bin := flag.String("formd", "", "the formd binary to run (required)")
	tusdBin := flag.String("tusd", "", "a tusd binary built from "+tusdModule+" at the version the formd binary embeds; default: go install it into a temporary directory")
	dir := flag.String("dir", "", "a directory on the disk to measure: formd's --data, tusd's -upload-dir and dd's files go in a new directory here, removed at the end (default: the system's temp dir)")
	rounds := flag.Int("rounds", 5, "rounds of the throughput and resume comparisons")
	sizesFlag := flag.String("sizes", "10MiB,100MiB", "sizes of the uploads, comma-separated (such as 1MiB,10MiB): each with a new formd and tusd")
	nsFlag := flag.String("n", "1,20", "how many uploads at once, comma-separated")
	resume := flag.Bool("resume", true, "measure a resume after a drop at 50 % for each size")
	bigN := flag.Int("big-n", 50, "concurrent uploads in the memory run after the sizes; 0 for none")
	bigSizeFlag := flag.String("big-size", "50MiB", "size of each upload in the memory run")
	uploadsTo := flag.String("uploads", "", "formd's --uploads (such as s3://formd-test?endpoint=http://127.0.0.1:8333, credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); default its --data. With a bucket, tusd is not run and the baseline is a PUT to the bucket")
	flag.Parse()

	if *bin == "" {
		log.Fatal("give -formd, the binary to run")
	}
	if *rounds < 1 {
		log.Fatalf("-rounds %d: give 1 or more", *rounds)
	}
	sizes, err := parseSizes("-sizes", *sizesFlag)
	if err != nil {
		log.Fatal(err)
	}
	bigSizes, err := parseSizes("-big-size", *bigSizeFlag)
	if err != nil {
		log.Fatal(err)
	}
	bigSize := bigSizes[0]
	ns, err := parseCounts(*nsFlag)
	if err != nil {
		log.Fatal(err)
	}

	root := *dir
	if root == "" {
		root = os.TempDir()
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		log.Fatal(err)
	}
	// One batch is on the disk at a time, beside dd's source and the
	// 1 GiB formd's --upload-reserve keeps free.
	need := slices.Max(sizes)*int64(slices.Max(ns)+1) + 1<<30
	if *bigN > 0 {
		need = max(need, bigSize*int64(*bigN)+1<<30)
	}
	if err := enoughDisk(root, need); err != nil {
		log.Fatal(err)
	}
	work, err := os.MkdirTemp(root, "formd-bench-uploads-")
	if err != nil {
		log.Fatal(err)
	}
	var cleanups []func()
	cleanups = append(cleanups, func() { os.RemoveAll(work) })
	fatal := func(err error) {
		for _, c := range slices.Backward(cleanups) {
			c()
		}
		log.Fatal(err)
	}

	withTusd := *uploadsTo == ""
	var tusdVer string
	if withTusd {
		want, err := embeddedTusd(*bin)
		if err != nil {
			fatal(err)
		}
		if *tusdBin == "" {
			fmt.Printf("building tusd %s (go install %s/cmd/tusd@%s)…\n", want, tusdModule, want)
			if *tusdBin, err = buildTusd(want, work); err != nil {
				fatal(err)
			}
		}
		if tusdVer, err = tusdVersion(*tusdBin); err != nil {
			fatal(err)
		}
		if tusdVer != want {
			fatal(fmt.Errorf("%s was built from %s %q, and formd embeds %s: build it with GOBIN=DIR go install %s/cmd/tusd@%s, or leave -tusd out", *tusdBin, tusdModule, tusdVer, want, tusdModule, want))
		}
	}
	var bucket *putBaseline
	if !withTusd {
		if bucket, err = newPutBaseline(*uploadsTo); err != nil {
			fatal(err)
		}
	}

	loadStart := proc.LoadAvg()
	fmt.Printf("machine: %d CPUs (shared with other work), load %s at the start; disk under %s\n", runtime.NumCPU(), loadStart, root)
	if withTusd {
		fmt.Printf("durability: formd fsyncs an upload's new files and their directory before the 201, the bytes before each 204, and at the last byte\n"+
			"  keeps them under their SHA-256 (fsync'd link, directories) and records the upload complete in its store (a commit);\n"+
			"  tusd %s (filestore) never fsyncs: it answers after write(2) and close(2), the bytes in the page cache.\n"+
			"  tusd+fsync: the same tusd, the harness fsyncing what formd fsyncs (bytes file, .info, directory after the 201; bytes file after the 204), timed as tusd's.\n", tusdVer)
	} else {
		fmt.Printf("with --uploads %s: tusd is not run; the baseline is a PUT of the same bytes to the bucket\n", *uploadsTo)
	}

	times := map[key][]time.Duration{}
	cpus := map[key][]time.Duration{}
	resumes := map[key][]resumption{}
	type mem struct {
		size           int64
		name           string
		ready, peak, h int64
	}
	var mems []mem

	for _, size := range sizes {
		blk := filepath.Join(work, fmt.Sprintf("size-%d", size))
		if err := os.MkdirAll(blk, 0o700); err != nil {
			fatal(err)
		}
		fd, err := startFormd(*bin, filepath.Join(blk, "formd"), *uploadsTo, slices.Max(sizes))
		if err != nil {
			fatal(err)
		}
		cleanups = append(cleanups, fd.stop)
		srvs := []*server{fd}
		targets := []*target{{name: nameFormd, srv: fd, create: fd.base + "/v1/forms/bench-files/uploads"}}
		if withTusd {
			tdir := filepath.Join(blk, "tusd")
			td, err := startTusd(*tusdBin, tdir)
			if err != nil {
				fatal(err)
			}
			cleanups = append(cleanups, td.stop)
			srvs = append(srvs, td)
			targets = append(targets,
				&target{name: nameTusd, srv: td, create: td.base + "/files/"},
				&target{name: nameTusdFsync, srv: td, create: td.base + "/files/", syncDir: filepath.Join(tdir, "files")})
		}
		stopSampling := sampleRSS(srvs...)

		body := pdf(size)
		src := filepath.Join(blk, "dd-src")
		if err := os.WriteFile(src, body, 0o600); err != nil {
			fatal(err)
		}
		names := []string{}
		for _, t := range targets {
			names = append(names, t.name)
		}
		names = append(names, nameDD)
		if bucket != nil {
			names = append(names, namePut)
		}
		for _, n := range ns {
			fmt.Printf("%s × %d at once: %d rounds…\n", form.Size(size), n, *rounds)
			for r := range *rounds {
				for i := range names {
					name := names[(i+r)%len(names)]
					k := key{size, n, name}
					syscall.Sync()
					var d time.Duration
					switch name {
					case nameDD:
						d, err = ddMany(n, src, blk)
					case namePut:
						d, err = bucket.putMany(n, body)
					default:
						t := targets[slices.IndexFunc(targets, func(t *target) bool { return t.name == name })]
						cpu0 := t.srv.cpu()
						var locs []string
						d, locs, err = t.uploadMany(n, body)
						cpus[k] = append(cpus[k], t.srv.cpu()-cpu0)
						if err == nil {
							err = t.remove(locs)
						}
					}
					if err != nil {
						fatal(err)
					}
					times[k] = append(times[k], d)
				}
			}
		}
		if *resume {
			fmt.Printf("%s: resume after a drop at 50 %%, %d rounds…\n", form.Size(size), *rounds)
			for r := range *rounds {
				for i := range targets {
					t := targets[(i+r)%len(targets)]
					syscall.Sync()
					res, err := t.resumeAtHalf(body)
					if err == nil {
						err = t.remove([]string{res.loc})
					}
					if err != nil {
						fatal(err)
					}
					k := key{size, 1, t.name}
					resumes[k] = append(resumes[k], res)
				}
			}
		}
		stopSampling()
		for _, s := range srvs {
			mems = append(mems, mem{size, s.name, s.ready, s.peakRSS(), s.hwm()})
			s.stop()
		}
		cleanups = cleanups[:1]
		os.RemoveAll(blk)
	}

	type bigRun struct {
		name             string
		took             time.Duration
		ready, peak, hwm int64
	}
	var bigs []bigRun
	if *bigN > 0 {
		starts := []func(string) (*server, error){func(d string) (*server, error) { return startFormd(*bin, d, *uploadsTo, bigSize) }}
		if withTusd {
			starts = append(starts, func(d string) (*server, error) { return startTusd(*tusdBin, d) })
		}
		for i, startSrv := range starts {
			blk := filepath.Join(work, fmt.Sprintf("big-%d", i))
			s, err := startSrv(blk)
			if err != nil {
				fatal(err)
			}
			cleanups = append(cleanups, s.stop)
			fmt.Printf("memory: %d × %s at once into %s…\n", *bigN, form.Size(bigSize), s.name)
			t := &target{name: s.name, srv: s, create: s.base + "/files/"}
			if s.name == nameFormd {
				t.create = s.base + "/v1/forms/bench-files/uploads"
			}
			syscall.Sync()
			stopSampling := sampleRSS(s)
			start := time.Now()
			locs, err := t.uploadStreams(*bigN, bigSize)
			took := time.Since(start)
			stopSampling()
			if err == nil {
				err = t.remove(locs)
			}
			if err != nil {
				fatal(err)
			}
			bigs = append(bigs, bigRun{s.name, took, s.ready, s.peakRSS(), s.hwm()})
			s.stop()
			cleanups = cleanups[:1]
			os.RemoveAll(blk)
		}
	}
	os.RemoveAll(work)

	// The report.
	fmt.Printf("\nThroughput: medians of %d rounds, from the first request to the last 204 (tusd+fsync: to the last fsync after it); CPU is the server process's, per GiB taken (tusd+fsync's fsyncs are the harness's, not counted)\n", *rounds)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "size\tN\tserver\tmedian\tMiB/s\tCPU s/GiB\trounds\t")
	for _, size := range sizes {
		for _, n := range ns {
			for _, name := range []string{nameFormd, nameTusd, nameTusdFsync, nameDD, namePut} {
				k := key{size, n, name}
				ds := times[k]
				if len(ds) == 0 {
					continue
				}
				m := median(ds)
				gib := float64(int64(n)*size) / (1 << 30)
				cpu := "-"
				if cs := cpus[k]; len(cs) > 0 {
					cpu = fmt.Sprintf("%.2f", median(cs).Seconds()/gib)
				}
				fmt.Fprintf(w, "%s\t%d\t%s\t%v\t%.0f\t%s\t%v\t\n", form.Size(size), n, name, m.Round(time.Millisecond), gib*1024/m.Seconds(), cpu, rounded(ds))
			}
		}
	}
	w.Flush()

	fmt.Printf("\nRatios of throughput (the other's median time over formd's; ≥ 1 is formd faster)\n")
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "size\tN\t"
	others := []string{nameTusdFsync, nameTusd, nameDD}
	if bucket != nil {
		others = []string{nameDD, namePut}
	}
	for _, o := range others {
		head += "formd ÷ " + o + "\t"
	}
	fmt.Fprintln(w, head)
	for _, size := range sizes {
		for _, n := range ns {
			line := fmt.Sprintf("%s\t%d\t", form.Size(size), n)
			f := median(times[key{size, n, nameFormd}])
			for _, o := range others {
				line += fmt.Sprintf("%.2f\t", median(times[key{size, n, o}]).Seconds()/f.Seconds())
			}
			fmt.Fprintln(w, line)
		}
	}
	w.Flush()

	if *resume {
		fmt.Printf("\nResume after a drop at 50 %%: medians of %d rounds; the whole file (N = 1) beside it\n", *rounds)
		if withTusd {
			fmt.Println("(a tusd HEAD that finds the cut PATCH still holding the upload's lock file waits for its filelocker's next try, -filelock-acquirer-poll-interval, 2s by default: drop → offset is then about 2 s; offset → 204 compares the servers' own work)")
		}
		w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "size\tserver\tdrop → offset\toffset → 204\tdrop → 204\twhole file\tresumed from (KiB, of half)\tHEAD+PATCH tries\t")
		for _, size := range sizes {
			for _, t := range []string{nameFormd, nameTusd, nameTusdFsync} {
				rs := resumes[key{size, 1, t}]
				if len(rs) == 0 {
					continue
				}
				var to, rest, total []time.Duration
				var kept, tries []string
				for _, r := range rs {
					to, rest, total = append(to, r.toOffset), append(rest, r.rest), append(total, r.toOffset+r.rest)
					kept = append(kept, strconv.FormatInt(r.kept>>10, 10))
					tries = append(tries, strconv.Itoa(r.tries))
				}
				whole := "-"
				if ds := times[key{size, 1, t}]; len(ds) > 0 {
					whole = median(ds).Round(time.Millisecond).String()
				}
				fmt.Fprintf(w, "%s\t%s\t%v\t%v\t%v\t%s\t%s of %d\t%s\t\n", form.Size(size), t, median(to).Round(time.Millisecond), median(rest).Round(time.Millisecond),
					median(total).Round(time.Millisecond), whole, strings.Join(kept, " "), size/2>>10, strings.Join(tries, " "))
			}
		}
		w.Flush()
	}

	fmt.Printf("\nMemory: each server's VmRSS once ready, the highest sampled every 20 ms through the size's runs (up to %d uploads at once), and VmHWM after them; a new process for each size\n", slices.Max(ns))
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "size\tserver\tVmRSS ready (MiB)\tVmRSS max (MiB)\tVmHWM (MiB)\t")
	for _, m := range mems {
		fmt.Fprintf(w, "%s\t%s\t%.1f\t%.1f\t%.1f\t\n", form.Size(m.size), m.name, mib(m.ready), mib(m.peak), mib(m.h))
	}
	w.Flush()
	if len(bigs) > 0 {
		fmt.Printf("\nMemory with %d × %s at once (%s), each streamed from a generator\n", *bigN, form.Size(bigSize), form.Size(bigSize*int64(*bigN)))
		w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "server\ttook\tVmRSS ready (MiB)\tVmRSS max (MiB)\tVmHWM (MiB)\t")
		for _, b := range bigs {
			fmt.Fprintf(w, "%s\t%v\t%.1f\t%.1f\t%.1f\t\n", b.name, b.took.Round(time.Millisecond), mib(b.ready), mib(b.peak), mib(b.hwm))
		}
		w.Flush()
	}
	fmt.Printf("\nload %s at the start, %s at the end\n", loadStart, proc.LoadAvg())
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// parseSizes reads a comma-separated list of sizes (10MiB, 1048576).
func parseSizes(flagName, s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		z, err := form.ParseSize(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
		// The tag that makes each upload's bytes its own follows the
		// PDF header; formd's form takes files up to form.MaxMaxSize.
		if z < 1<<10 || z > form.MaxMaxSize {
			return nil, fmt.Errorf("%s: %s is out of range: give 1KiB to %s", flagName, strings.TrimSpace(f), form.Size(form.MaxMaxSize))
		}
		out = append(out, int64(z))
	}
	return out, nil
}

// parseCounts reads -n, a comma-separated list of counts.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1000 {
			return nil, fmt.Errorf("-n: %q is not a count of uploads at once: give whole numbers from 1 to 1000, such as 1,20", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// enoughDisk says whether the file system of dir has need bytes free.
func enoughDisk(dir string, need int64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("free space under %s: %w", dir, err)
	}
	if free := int64(st.Bavail) * st.Bsize; free < need {
		return fmt.Errorf("%s has %.1f GiB free, and the run needs %.1f GiB (one batch of the largest size and N, dd's source and formd's 1GiB --upload-reserve): give a -dir with more room, or smaller -sizes, -n or -big-n",
			dir, float64(free)/(1<<30), float64(need)/(1<<30))
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func rounded(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
