// Command summary turns the JSON reports that bench/run.sh collects
// (formd loadtest --json, one file per run, named SYSTEM-cCLIENTS-rROUND.json)
// into the Markdown tables of BENCHMARKS.md: the median of each cell over
// the rounds, and the ratios formd / ceiling and formd / PocketBase taken
// round by round (each pair measured minutes apart on the same machine)
// before their median is taken.
//
//	go run ./bench/summary DIR
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
)

// report is the part of formd loadtest's JSON report the tables use.
type report struct {
	OK         bool `json:"ok"`
	Throughput struct {
		AcksPerS float64 `json:"acks_per_s"`
	} `json:"throughput"`
	Latency struct {
		Outcome struct {
			P50 float64 `json:"p50_ms"`
			P99 float64 `json:"p99_ms"`
		} `json:"outcome"`
	} `json:"latency"`
	ServerCPU *struct {
		PerAckUS float64 `json:"per_ack_us"`
		Cores    float64 `json:"cores"`
	} `json:"server_cpu"`
	Verdict *struct {
		Lost       int `json:"lost"`
		Duplicated int `json:"duplicated"`
		Oversold   int `json:"oversold"`
		Unresolved int `json:"unresolved"`
		Violations int `json:"violations"`
	} `json:"verdict"`
	Plain *struct {
		Sent     int64 `json:"sent"`
		OK       int64 `json:"ok_2xx"`
		NoAnswer int64 `json:"no_answer"`
		Failed   int64 `json:"failed_5xx"`
	} `json:"plain"`
	Kills int `json:"kills"`
}

type cell struct{ system, clients string }

var name = regexp.MustCompile(`^(.+)-c(\d+)-r(\d+)\.json$`)

// systems, in the order the tables show them.
var systems = []string{"ceiling", "formd", "formd-faults", "pocketbase"}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: summary DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "summary:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	runs := map[cell]map[int]report{} // cell → round → report
	clientSet := map[int]bool{}
	for _, f := range files {
		m := name.FindStringSubmatch(filepath.Base(f))
		if m == nil {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r report
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		c := cell{m[1], m[2]}
		if runs[c] == nil {
			runs[c] = map[int]report{}
		}
		round, _ := strconv.Atoi(m[3])
		n, _ := strconv.Atoi(m[2])
		clientSet[n] = true
		runs[c][round] = r
	}
	if len(runs) == 0 {
		return fmt.Errorf("no SYSTEM-cN-rN.json reports in %s", dir)
	}
	var clients []string
	for n := range clientSet {
		clients = append(clients, strconv.Itoa(n))
	}
	sort.Slice(clients, func(i, j int) bool { a, _ := strconv.Atoi(clients[i]); b, _ := strconv.Atoi(clients[j]); return a < b })

	fmt.Println("| system | clients | rounds | acks/s (median) | p50 ms | p99 ms | server CPU µs/ack | server cores | check |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, n := range clients {
		for _, s := range systems {
			rs := runs[cell{s, n}]
			if len(rs) == 0 {
				continue
			}
			var rate, p50, p99, cpu, cores []float64
			check := "—"
			bad, unanswered := 0, int64(0)
			for _, r := range rs {
				rate = append(rate, r.Throughput.AcksPerS)
				p50 = append(p50, r.Latency.Outcome.P50)
				p99 = append(p99, r.Latency.Outcome.P99)
				if r.ServerCPU != nil {
					cpu = append(cpu, r.ServerCPU.PerAckUS)
					cores = append(cores, r.ServerCPU.Cores)
				}
				if v := r.Verdict; v != nil {
					check = ""
					bad += v.Lost + v.Duplicated + v.Oversold + v.Unresolved + v.Violations
				}
				if p := r.Plain; p != nil {
					unanswered += p.NoAnswer + p.Failed
				}
			}
			switch {
			case check == "" && bad == 0:
				check = "0 lost / duplicated / oversold"
			case check == "":
				check = fmt.Sprintf("**%d failures**", bad)
			case unanswered > 0:
				check = fmt.Sprintf("%d requests without a 2xx answer", unanswered)
			}
			fmt.Printf("| %s | %s | %d | %.0f | %.1f | %.1f | %s | %s | %s |\n", s, n, len(rs),
				median(rate), median(p50), median(p99), orDash(cpu, "%.0f"), orDash(cores, "%.2f"), check)
		}
	}
	fmt.Println()
	fmt.Println("| clients | formd / ceiling | formd / PocketBase | formd with faults / formd |")
	fmt.Println("|---:|---:|---:|---:|")
	for _, n := range clients {
		fmt.Printf("| %s | %s | %s | %s |\n", n,
			ratio(runs[cell{"formd", n}], runs[cell{"ceiling", n}], "%.0f%%", 100),
			ratio(runs[cell{"formd", n}], runs[cell{"pocketbase", n}], "%.1f×", 1),
			ratio(runs[cell{"formd-faults", n}], runs[cell{"formd", n}], "%.0f%%", 100))
	}
	return nil
}

// ratio is the median over rounds of a's rate over b's in the same round.
func ratio(a, b map[int]report, format string, scale float64) string {
	var rs []float64
	for round, ra := range a {
		if rb, ok := b[round]; ok && rb.Throughput.AcksPerS > 0 {
			rs = append(rs, scale*ra.Throughput.AcksPerS/rb.Throughput.AcksPerS)
		}
	}
	if len(rs) == 0 {
		return "—"
	}
	return fmt.Sprintf(format, median(rs))
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func orDash(xs []float64, format string) string {
	if len(xs) == 0 {
		return "—"
	}
	return fmt.Sprintf(format, median(xs))
}
