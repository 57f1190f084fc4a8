//go:build !purego

package suffstat

import "unsafe"

// cpuid and xgetbv are implemented in kernel_amd64.s.
func cpuid(eaxIn, ecxIn uint32) (eax, ebx, ecx, edx uint32)
func xgetbv() (eax, edx uint32)

//go:noescape
func tile16x8AVX512(a, b *float64, rows, ld int, c *float64, ldc int)

//go:noescape
func tile16x6IFMA(a, b *uint64, rows, ld int, lo, hi *uint64, ldc int)

//go:noescape
func quantize8(dst *uint64, src *float64, n int) bool

//go:noescape
func tile8x6AVX2(a, b *float64, rows, ld int, c *float64, ldc int)

// hasAVX2FMA reports whether the processor and operating system support
// AVX2 and FMA (CPUID feature bits and the OS-enabled YMM state in XCR0).
func hasAVX2FMA() bool {
	maxID, _, _, _ := cpuid(0, 0)
	if maxID < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const (
		fma     = 1 << 12
		osxsave = 1 << 27
		avx     = 1 << 28
	)
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 { // XMM and YMM state enabled
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0 // AVX2
}

// hasAVX512F reports whether the processor and operating system support
// AVX-512F (CPUID and the OS-enabled opmask/ZMM state in XCR0).
func hasAVX512F() bool {
	if !hasAVX2FMA() {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&0xe6 != 0xe6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<16) != 0
}

// hasAVX512IFMA reports whether AVX-512F and AVX512_IFMA (52-bit integer
// multiply-add) are usable.
func hasAVX512IFMA() bool {
	if !hasAVX512F() {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<21) != 0
}

func archKernels() []kernel {
	var ks []kernel
	if hasAVX512IFMA() {
		ks = append(ks, kernel{name: "avx512ifma", mr: 16, nr: 6, itile: tile16x6I, quant: quantizeAVX512})
	}
	if hasAVX512F() {
		ks = append(ks, kernel{name: "avx512", mr: 16, nr: 8, tile: tile16x8})
	}
	if hasAVX2FMA() {
		ks = append(ks, kernel{name: "avx2", mr: 8, nr: 6, tile: tile8x6})
	}
	return ks
}

// tile16x8 checks the bounds the assembly relies on, then calls it.
func tile16x8(a, b []float64, rows, ld int, c []float64, ldc int) {
	if rows == 0 {
		return
	}
	if len(a) < (rows-1)*ld+16 || len(b) < (rows-1)*ld+8 || len(c) < 7*ldc+16 {
		panic("suffstat: tile16x8: slice too short")
	}
	tile16x8AVX512(unsafe.SliceData(a), unsafe.SliceData(b), rows, ld, unsafe.SliceData(c), ldc)
}

// tile8x6 checks the bounds the assembly relies on, then calls it.
func tile8x6(a, b []float64, rows, ld int, c []float64, ldc int) {
	if rows == 0 {
		return
	}
	if len(a) < (rows-1)*ld+8 || len(b) < (rows-1)*ld+6 || len(c) < 5*ldc+8 {
		panic("suffstat: tile8x6: slice too short")
	}
	tile8x6AVX2(unsafe.SliceData(a), unsafe.SliceData(b), rows, ld, unsafe.SliceData(c), ldc)
}

// tile16x6I checks the bounds the assembly relies on, then calls it.
func tile16x6I(a, b []uint64, rows, ld int, lo, hi []uint64, ldc int) {
	if rows == 0 {
		return
	}
	if len(a) < (rows-1)*ld+16 || len(b) < (rows-1)*ld+6 || len(lo) < 5*ldc+16 || len(hi) < 5*ldc+16 {
		panic("suffstat: tile16x6I: slice too short")
	}
	tile16x6IFMA(unsafe.SliceData(a), unsafe.SliceData(b), rows, ld, unsafe.SliceData(lo), unsafe.SliceData(hi), ldc)
}

// quantizeAVX512 converts the first len(src) &^ 7 values (see quantize8)
// and reports how many it converted; 0 and false when one is out of range.
func quantizeAVX512(dst []uint64, src []float64) (int, bool) {
	n := len(src) &^ 7
	if n == 0 {
		return 0, true
	}
	if len(dst) < n {
		panic("suffstat: quantizeAVX512: dst too short")
	}
	if !quantize8(unsafe.SliceData(dst), unsafe.SliceData(src), n) {
		return 0, false
	}
	return n, true
}
