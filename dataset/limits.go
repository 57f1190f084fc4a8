package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// ErrTooWide is returned (wrapped) when the statistics of a schema's
// encoded rows would not fit in memory.
var ErrTooWide = errors.New("too many encoded columns for the exact statistics to fit in memory")

// statsBytesPerEntry is the memory of one accumulator per (K+1)² entries:
// the exact totals (suffstat: three 64-bit words per entry of the upper
// triangle of the padded K+1 statistics, 12 bytes per square entry) and
// the accumulation buffers of one worker (the wide Gram of [h₁|h₂|1] as
// float64 and as int64, about (2K)² entries each: 64 bytes per square
// entry).
const statsBytesPerEntry = 12 + 64

// StatsBytes estimates the memory, in bytes, of the exact statistics of
// rows of width k accumulated by workers goroutines: one accumulator each,
// statsBytesPerEntry·(k+1)² bytes apiece. It is a float64 so that it cannot
// overflow for any width.
func StatsBytes(k, workers int) float64 {
	w := float64(max(workers, 1))
	return w * statsBytesPerEntry * float64(k+1) * float64(k+1)
}

// defaultStatsLimit is StatsLimit when the machine's memory is unknown.
const defaultStatsLimit = 16 << 30

// StatsLimit is the memory the statistics may take: half of the machine's
// physical memory (MemTotal in /proc/meminfo), or 16 GiB where that cannot
// be read. The other half is left for the rows, the fit's D×D matrices and
// everything else.
func StatsLimit() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return defaultStatsLimit
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err != nil || !(kb > 0) {
				break
			}
			return kb * 1024 / 2
		}
	}
	return defaultStatsLimit
}

// CheckWidth refuses, before anything is allocated, rows of width k (the
// encoded features, intercept and target) whose statistics accumulated by
// workers goroutines (≤ 0: one) would take more than limit bytes (≤ 0:
// StatsLimit()). The error wraps ErrTooWide and names the limit, the
// estimate and the widest width that fits. Without it a very wide schema
// (100,000 features) crashed the runtime with "fatal error: out of memory".
func CheckWidth(k, workers int, limit float64) error {
	if limit <= 0 {
		limit = StatsLimit()
	}
	workers = max(workers, 1)
	need := StatsBytes(k, workers)
	if need <= limit {
		return nil
	}
	widest := func(w int) int {
		return max(int(math.Sqrt(limit/(statsBytesPerEntry*float64(w))))-1, 0)
	}
	msg := fmt.Sprintf("%s: the schema encodes %d columns (features, intercept and target); their exact statistics need about %s with %d worker(s), more than the limit of %s (half of this machine's memory); at most %d columns fit",
		"dataset: too many columns", k, bytesText(need), workers, bytesText(limit), widest(workers))
	if workers > 1 {
		msg += fmt.Sprintf(" (%d with --workers 1)", widest(1))
	}
	return tooWideError(msg)
}

// tooWideError is a message that wraps ErrTooWide.
type tooWideError string

func (e tooWideError) Error() string { return string(e) }
func (e tooWideError) Unwrap() error { return ErrTooWide }

// bytesText formats a byte count in binary units.
func bytesText(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%.3g %s", b, units[i])
}
