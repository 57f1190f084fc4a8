//go:build !amd64

package suffstat

func archKernels() []kernel { return nil }
