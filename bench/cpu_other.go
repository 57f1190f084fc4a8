//go:build !unix

package main

import "time"

// processCPU is unknown here (CPU columns read 0).
func processCPU() (user, sys time.Duration) { return 0, 0 }
