package suffstat

// A kernel updates the block accumulator with the Gram matrix of a panel.
// Tiles are mr rows × nr columns of the Gram; the panel's padded width is a
// multiple of nr and the Gram's column stride a multiple of mr.
type kernel struct {
	name   string
	mr, nr int
	// tile adds Σ_k a[k*ld : k*ld+mr] ⊗ b[k*ld : k*ld+nr] into the mr×nr
	// tile whose column t starts at c[t*ldc].
	tile func(a, b []float64, rows, ld int, c []float64, ldc int)
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

var genericKernel = kernel{name: "go", mr: 4, nr: 4, tile: tile4x4Go}

// tile4x4Go is the portable micro-kernel: a 4×4 tile held in 16 scalars.
func tile4x4Go(a, b []float64, rows, ld int, c []float64, ldc int) {
	var c00, c01, c02, c03, c10, c11, c12, c13 float64
	var c20, c21, c22, c23, c30, c31, c32, c33 float64
	for k := 0; k < rows; k++ {
		o := k * ld
		aa := a[o : o+4 : o+4]
		bb := b[o : o+4 : o+4]
		a0, a1, a2, a3 := aa[0], aa[1], aa[2], aa[3]
		b0, b1, b2, b3 := bb[0], bb[1], bb[2], bb[3]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
		c02 += a0 * b2
		c12 += a1 * b2
		c22 += a2 * b2
		c32 += a3 * b2
		c03 += a0 * b3
		c13 += a1 * b3
		c23 += a2 * b3
		c33 += a3 * b3
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
	col = c[2*ldc : 2*ldc+4 : 2*ldc+4]
	col[0] += c02
	col[1] += c12
	col[2] += c22
	col[3] += c32
	col = c[3*ldc : 3*ldc+4 : 3*ldc+4]
	col[0] += c03
	col[1] += c13
	col[2] += c23
	col[3] += c33
}

// kernels lists the kernels usable on this machine, best first.
func kernels() []kernel {
	return append(archKernels(), genericKernel)
}

func bestKernel() kernel { return kernels()[0] }

// KernelName names the micro-kernel New selects on this machine ("avx512", "avx2" or
// "go"), for benchmark reports.
func KernelName() string { return bestKernel().name }
