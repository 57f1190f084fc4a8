//go:build !amd64 || purego

package suffstat

func archKernels() []kernel { return nil }
