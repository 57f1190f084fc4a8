package suffstat

import "math/bits"

// A kernel updates the block accumulator with the Gram matrix of a panel.
// Tiles are mr rows × nr columns of the Gram; the panel's padded width is a
// multiple of nr and the Gram's column stride a multiple of mr.
type kernel struct {
	name   string
	mr, nr int
	// tile adds Σ_k a[k*ld : k*ld+mr] ⊗ b[k*ld : k*ld+nr] into the mr×nr
	// tile whose column t starts at c[t*ldc].
	tile func(a, b []float64, rows, ld int, c []float64, ldc int)
	// itile, when set, makes this an integer kernel (ifma.go): it adds
	// the low and high 52 bits of the products of unsigned 52-bit
	// integers, Σ_k a[k*ld : k*ld+mr] ⊗ b[k*ld : k*ld+nr], into the tiles
	// of lo and hi (column t at t*ldc); tile is then nil.
	itile func(a, b []uint64, rows, ld int, lo, hi []uint64, ldc int)
	// quant, when set with itile, converts a prefix of a row to the
	// integer path's u (ifma.go) and returns its length, or false when a
	// value of the row is out of range (the caller then finds it).
	quant func(dst []uint64, src []float64) (int, bool)
}

// gramInt is gram for an integer kernel.
func (kn kernel) gramInt(panel []uint64, rows, ld int, lo, hi []uint64, ldc, kk int) {
	for jb := 0; jb < kk; jb += kn.nr {
		for ib := 0; ib < jb+kn.nr && ib < kk; ib += kn.mr {
			kn.itile(panel[ib:], panel[jb:], rows, ld, lo[jb*ldc+ib:], hi[jb*ldc+ib:], ldc)
		}
	}
}

// gram adds the upper triangle (tiles touching it) of the Gram matrix of the
// first rows rows of panel (stride ld) into blk (column stride ldc); kk is
// the number of meaningful columns.
func (kn kernel) gram(panel []float64, rows, ld int, blk []float64, ldc, kk int) {
	for jb := 0; jb < kk; jb += kn.nr {
		for ib := 0; ib < jb+kn.nr && ib < kk; ib += kn.mr {
			kn.tile(panel[ib:], panel[jb:], rows, ld, blk[jb*ldc+ib:], ldc)
		}
	}
}

// kernels lists the kernels usable on this machine, best first.
//
// goIntKernel comes last, after genericKernel, so it is never the one New
// selects: it is the integer path (ifma.go) in portable Go, listed so that
// the tests that run every kernel exercise that path's normalization and
// spills on every machine, not only on one with AVX-512 IFMA.
func kernels() []kernel {
	return append(archKernels(), genericKernel, goIntKernel)
}

// goIntKernel is the integer kernel in portable Go (see kernels).
var goIntKernel = kernel{name: "go-int", mr: 4, nr: 2, itile: itile4x2Go}

// itile4x2Go is kernel.itile for a 4×2 tile: it adds the low 52 bits and
// the high bits (bits 52 and up) of each product a_i·b_t of unsigned
// integers below 2⁵² into lo and hi, as AVX-512 IFMA's VPMADD52LUQ and
// VPMADD52HUQ do.
func itile4x2Go(a, b []uint64, rows, ld int, lo, hi []uint64, ldc int) {
	const mask = 1<<52 - 1
	for k := 0; k < rows; k++ {
		o := k * ld
		for t := 0; t < 2; t++ {
			bt := b[o+t]
			for i := 0; i < 4; i++ {
				h, l := bits.Mul64(a[o+i], bt)
				lo[t*ldc+i] += l & mask
				hi[t*ldc+i] += h<<12 | l>>52
			}
		}
	}
}

func bestKernel() kernel { return kernels()[0] }

// KernelName names the micro-kernel New selects on this machine
// ("avx512ifma", "avx512", "avx2" or "go"), for benchmark reports.
func KernelName() string { return bestKernel().name }

// genericKernel is the portable micro-kernel: a 4×2 tile in 8 scalars,
// which the Go compiler keeps in registers on amd64 (a 4×4 tile spills and
// runs at half the speed).
var genericKernel = kernel{name: "go", mr: 4, nr: 2, tile: tile4x2Go}

func tile4x2Go(a, b []float64, rows, ld int, c []float64, ldc int) {
	var c00, c10, c20, c30, c01, c11, c21, c31 float64
	for k := 0; k < rows; k++ {
		o := k * ld
		aa := a[o : o+4 : o+4]
		bb := b[o : o+2 : o+2]
		a0, a1, a2, a3 := aa[0], aa[1], aa[2], aa[3]
		b0, b1 := bb[0], bb[1]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
	}
	col := c[0:4:4]
	col[0] += c00
	col[1] += c10
	col[2] += c20
	col[3] += c30
	col = c[ldc : ldc+4 : ldc+4]
	col[0] += c01
	col[1] += c11
	col[2] += c21
	col[3] += c31
}
