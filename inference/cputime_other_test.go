//go:build !unix

package inference

// processCPU is 0 where getrusage is not available (the cpu-s/op metric
// then reads 0).
func processCPU() float64 { return 0 }
