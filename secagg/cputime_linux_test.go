//go:build linux

package secagg

import (
	"syscall"
	"time"
	"unsafe"
)

// Clock IDs of clock_gettime(2).
const (
	clockProcessCPUTime = 2
	clockThreadCPUTime  = 3
)

func cpuClock(id uintptr) (time.Duration, bool) {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, id, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// threadCPU returns the CPU time consumed by the calling OS thread (the
// benchmark locks its goroutine to one thread), which, unlike wall time,
// does not count the time other processes hold the shared cores. It reads
// CLOCK_THREAD_CPUTIME_ID (nanosecond resolution; getrusage's is a tick).
func threadCPU() (time.Duration, bool) { return cpuClock(clockThreadCPUTime) }

// processCPU returns the CPU time consumed by the whole process (all
// threads), for multi-threaded benchmarks.
func processCPU() (time.Duration, bool) { return cpuClock(clockProcessCPUTime) }
