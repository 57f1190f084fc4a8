package paillier

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sync"
)

// BatchWeightBits is the length of the random weights of batch
// verification: a batch containing an invalid proof passes with
// probability at most 2^-BatchWeightBits (see VerifyPartials).
const BatchWeightBits = 128

// batchSplitBelow is the batch size under which a failed batch is checked
// proof by proof instead of split in halves: a batch check costs two full
// exponentiations (as much as one single verification) plus short ones.
const batchSplitBelow = 4

// chunkBits is the chunk length of chunked exponentiation: with
// P_j = g^(2^(chunkBits j)) precomputed, g^E = prod_j P_j^(E_j) for the
// chunkBits-bit chunks E_j of E, a short multi-exponentiation (chunkBits
// squarings shared by all chunks) in place of |E| squarings.
const chunkBits = 384

// chunked holds g^(2^(chunkBits j)) for j < len(chunked).
type chunked []*big.Int

// newChunked precomputes the chunk powers of g for exponents of up to bits
// bits (about bits squarings, done by big.Int.Exp with the exponent
// 2^chunkBits: its Montgomery squarings cost about 0.6 of a
// multiplication and reduction with Mul and Mod).
func newChunked(g *big.Int, bits int, m *big.Int) chunked {
	var out chunked
	x := new(big.Int).Mod(g, m)
	step := new(big.Int).Lsh(bigOne, chunkBits)
	for j := 0; j*chunkBits < bits; j++ {
		out = append(out, x)
		if (j+1)*chunkBits < bits {
			x = new(big.Int).Exp(x, step, m)
		}
	}
	return out
}

// exp returns g^e mod m for e >= 0; an exponent longer than the chunks
// cover falls back to one exponentiation.
func (c chunked) exp(e, m *big.Int) *big.Int {
	if e.BitLen() > len(c)*chunkBits {
		return new(big.Int).Exp(c[0], e, m)
	}
	mask := new(big.Int).Sub(new(big.Int).Lsh(bigOne, chunkBits), bigOne)
	exps := make([]*big.Int, len(c))
	for j := range c {
		exps[j] = new(big.Int).Rsh(e, uint(j*chunkBits))
		exps[j].And(exps[j], mask)
	}
	return straus(c, exps, m)
}

// vPowers returns the chunk powers of v, enough for the exponents of the
// prover (B bits) and of a batch check of up to 2^20 claims (computed once
// per key: about B + 150 squarings, 17 elements at 2048 bits and N = 250).
func (tpk *ThresholdPublicKey) vPowers() chunked {
	tpk.vPowOnce.Do(func() {
		tpk.vPow = newChunked(tpk.v, tpk.proofRandomBits()+1+BatchWeightBits+20, tpk.nSquared)
	})
	return tpk.vPow
}

// Claim is one partial decryption to verify against the ciphertext it
// claims to decrypt.
type Claim struct {
	Ciphertext *Ciphertext
	Partial    *PartialDecryption
}

// VerifyPartials verifies many partial decryptions at once, of one
// ciphertext or of several, and returns one error per claim (nil for a
// valid one), with the same verdicts as VerifyPartial on each claim except
// with probability at most 2^-128 for each batch check (below).
//
// Batch check. For claim k (ciphertext c, party i, c_i, proof (a, b, z),
// e = H(...)) let
//
//	X_k = ((c^4)^z / (a (c_i^2)^e))^2,   Y_k = (v^z / (b v_i^e))^2,
//
// elements of the group Q of squares of Z*_{n^2} (a and b are checked to be
// units); VerifyPartial accepts claim k iff X_k = Y_k = 1 (Proof). Draw
// independent weights rho_k, sigma_k uniform in [0, 2^128) from crypto/rand
// after the proofs are fixed, and accept the batch iff
//
//	prod_k X_k^rho_k Y_k^sigma_k = 1,
//
// computed as L^2 = R^2 with
//
//	L = prod_c (c^4)^(sum_{k on c} rho_k z_k) * v^(sum_k sigma_k z_k)
//	R = prod_k a_k^rho_k c_{i,k}^(2 e_k rho_k) b_k^sigma_k * prod_i v_i^(sum_{k of i} e_k sigma_k)
//
// by multi-exponentiation: one long exponentiation per distinct ciphertext
// and one for v, and short (128- to 385-bit) exponents for the 4 elements of
// each claim, with shared squarings. If every claim is valid the product is
// 1. If some X_j != 1, fix every weight but rho_j: X_j has an order d > 1
// dividing |Q| = n p'q' = p q p' q', so every prime factor of d is at least
// min(p', q') > 2^128 (true for every key of MinModulusBits or more), and
// rho -> X_j^rho is injective on [0, 2^128) (two weights with the same power
// differ by a multiple of d > 2^128). At most one of the 2^128 values of
// rho_j makes the product 1: the forgery passes with probability at most
// 2^-128, whatever the other claims and weights (likewise for Y_j and
// sigma_j). The weights must be independent for the two equations and for
// every claim: with one weight per claim, a forger could send a and b off
// by factors that cancel in X_k Y_k, and two forgers could cancel each
// other under equal weights. Squaring removes order-2 factors before the
// weights act: with unsquared equations an order-2 error would survive an
// odd weight and vanish under an even one, so the batch and the single
// check could disagree (Proof).
//
// On a failed batch check the claims are split in halves and each half is
// checked again with fresh weights, down to batches of fewer than 4, which
// are verified one by one with VerifyPartial; so the bad claims are named
// (their errors are VerifyPartial's) and the good ones accepted, at a cost
// of about 2 log2(k) batch checks per bad claim.
func (tpk *ThresholdPublicKey) VerifyPartials(claims []Claim) []error {
	errs := make([]error, len(claims))
	if tpk == nil {
		for k := range errs {
			errs[k] = fmt.Errorf("paillier: verify partial decryption: %w", errNoKey)
		}
		return errs
	}
	var ok []int
	for k, cl := range claims {
		if err := tpk.checkClaim(cl); err != nil {
			errs[k] = err
			continue
		}
		ok = append(ok, k)
	}
	tpk.verifyBatch(rand.Reader, claims, ok, errs)
	return errs
}

// checkClaim is VerifyPartial's checks before any exponentiation.
func (tpk *ThresholdPublicKey) checkClaim(cl Claim) error {
	if err := tpk.owns(cl.Ciphertext); err != nil {
		return fmt.Errorf("paillier: verify partial decryption: %w", err)
	}
	pd := cl.Partial
	if pd == nil || pd.ci == nil || pd.proof == nil {
		return errors.New("paillier: verify partial decryption: incomplete")
	}
	if pd.index < 1 || pd.index > tpk.parties {
		return fmt.Errorf("paillier: verify partial decryption: party %d outside [1, %d]", pd.index, tpk.parties)
	}
	if err := tpk.checkUnit(pd.ci); err != nil {
		return fmt.Errorf("paillier: verify partial decryption of party %d: c_i: %w", pd.index, err)
	}
	if err := tpk.checkProofShape(pd.proof); err != nil {
		return fmt.Errorf("paillier: verify partial decryption of party %d: %w", pd.index, err)
	}
	return nil
}

// verifyBatch sets errs[k] for the claims listed in idx (already shape
// checked), by batch checks and bisection.
func (tpk *ThresholdPublicKey) verifyBatch(random io.Reader, claims []Claim, idx []int, errs []error) {
	if len(idx) == 0 {
		return
	}
	if len(idx) < batchSplitBelow {
		for _, k := range idx {
			errs[k] = tpk.VerifyPartial(claims[k].Ciphertext, claims[k].Partial)
		}
		return
	}
	sub := make([]Claim, len(idx))
	for j, k := range idx {
		sub[j] = claims[k]
	}
	rho, sigma, err := batchWeights(random, len(sub))
	if err == nil && tpk.batchHolds(sub, rho, sigma) {
		return
	}
	if err != nil { // no weights: check one by one rather than fail
		for _, k := range idx {
			errs[k] = tpk.VerifyPartial(claims[k].Ciphertext, claims[k].Partial)
		}
		return
	}
	h := len(idx) / 2
	tpk.verifyBatch(random, claims, idx[:h], errs)
	tpk.verifyBatch(random, claims, idx[h:], errs)
}

// batchWeights draws 2k independent weights uniform in [0, 2^BatchWeightBits).
func batchWeights(random io.Reader, k int) (rho, sigma []*big.Int, err error) {
	buf := make([]byte, 2*k*BatchWeightBits/8)
	if _, err := io.ReadFull(random, buf); err != nil {
		return nil, nil, fmt.Errorf("paillier: batch verification weights: %w", err)
	}
	w := BatchWeightBits / 8
	rho = make([]*big.Int, k)
	sigma = make([]*big.Int, k)
	for j := range k {
		rho[j] = new(big.Int).SetBytes(buf[2*j*w : (2*j+1)*w])
		sigma[j] = new(big.Int).SetBytes(buf[(2*j+1)*w : (2*j+2)*w])
	}
	return rho, sigma, nil
}

// batchHolds evaluates the batch equation L^2 = R^2 of VerifyPartials for
// shape-checked claims with the given weights.
func (tpk *ThresholdPublicKey) batchHolds(claims []Claim, rho, sigma []*big.Int) bool {
	nsq := tpk.nSquared
	// Long exponents: one per distinct ciphertext (base c^4) and one for v.
	type long struct {
		c *big.Int
		e *big.Int
	}
	var longs []*long
	byCt := map[string]*long{}
	ev := new(big.Int)
	// Short exponents: a_k, c_i^2 (as c_i with 2 e rho), b_k, and v_i per party.
	bases := make([]*big.Int, 0, 3*len(claims)+8)
	exps := make([]*big.Int, 0, 3*len(claims)+8)
	viExp := map[int]*big.Int{}
	es := make([]*big.Int, len(claims))
	var wg sync.WaitGroup
	for k, cl := range claims { // the challenges, in parallel
		wg.Add(1)
		go func() {
			defer wg.Done()
			pd := cl.Partial
			es[k] = tpk.challenge(pd.index, cl.Ciphertext.c, pd.ci, pd.proof.a, pd.proof.b)
		}()
	}
	wg.Wait()
	t := new(big.Int)
	for k, cl := range claims {
		pd := cl.Partial
		key := string(cl.Ciphertext.c.Bytes())
		l := byCt[key]
		if l == nil {
			l = &long{c: cl.Ciphertext.c, e: new(big.Int)}
			byCt[key] = l
			longs = append(longs, l)
		}
		l.e.Add(l.e, t.Mul(rho[k], pd.proof.z))
		ev.Add(ev, t.Mul(sigma[k], pd.proof.z))
		bases = append(bases, pd.proof.a, pd.ci, pd.proof.b)
		ce := new(big.Int).Mul(es[k], rho[k])
		exps = append(exps, rho[k], ce.Lsh(ce, 1), sigma[k])
		if viExp[pd.index] == nil {
			viExp[pd.index] = new(big.Int)
		}
		viExp[pd.index].Add(viExp[pd.index], t.Mul(es[k], sigma[k]))
	}
	for i, e := range viExp {
		bases = append(bases, tpk.vi[i-1])
		exps = append(exps, e)
	}
	// L: the long exponentiations, in parallel with R.
	lv := make([]*big.Int, len(longs)+1)
	for j, l := range longs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c4 := new(big.Int).Exp(l.c, big.NewInt(4), nsq)
			lv[j] = c4.Exp(c4, l.e, nsq)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// v^E (E = sum sigma_k z_k, long) over the per-key chunk powers.
		lv[len(longs)] = tpk.vPowers().exp(ev, nsq)
	}()
	r := multiExp(bases, exps, nsq)
	wg.Wait()
	lhs := big.NewInt(1)
	for _, x := range lv {
		lhs.Mul(lhs, x)
		lhs.Mod(lhs, nsq)
	}
	return equalSquares(lhs, r, nsq)
}
