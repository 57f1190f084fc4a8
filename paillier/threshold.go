package paillier

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/big"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// MaxParties bounds the number of share holders. Exponents grow with
// Delta = N! (1000! has 8530 bits), so partial decryption slows down
// linearly in log N!; beyond this bound a different scheme is the answer.
const MaxParties = 1000

// ThresholdPublicKey is the public part of an (N, t) threshold Paillier key
// (Shoup 2000; Damgard-Jurik 2001 with s = 1): the Paillier public key, the
// verification base v (a random square generating the squares of
// Z*_{n^2}), and one verification key v_i = v^(Delta s_i) per party,
// Delta = N!. It is immutable and safe for concurrent use.
type ThresholdPublicKey struct {
	PublicKey
	parties, threshold int
	v                  *big.Int
	vi                 []*big.Int // vi[i-1] is party i's verification key
	delta              *big.Int   // N!
	combineInv         *big.Int   // (4 Delta^2)^-1 mod n
	tid                [32]byte   // SHA-256 of the canonical encoding
	vPowOnce           sync.Once
	vPow               chunked // v^(2^(chunkBits j)), for the prover and batch checks
}

// KeyShare is party Index's secret share s_i = f(i) mod n*m, with the
// threshold public key it belongs to. Keep it secret: t shares decrypt.
type KeyShare struct {
	pub   *ThresholdPublicKey
	index int
	s     *big.Int
}

// Parties returns N, the number of shares.
func (tpk *ThresholdPublicKey) Parties() int { return tpk.parties }

// Threshold returns t, the number of shares needed to decrypt.
func (tpk *ThresholdPublicKey) Threshold() int { return tpk.threshold }

// Public returns the Paillier public key used for encryption.
func (tpk *ThresholdPublicKey) Public() *PublicKey { return &tpk.PublicKey }

// VerificationKey returns a copy of v_i for party i in [1, N].
func (tpk *ThresholdPublicKey) VerificationKey(i int) (*big.Int, error) {
	if i < 1 || i > tpk.parties {
		return nil, fmt.Errorf("paillier: verification key: party %d outside [1, %d]", i, tpk.parties)
	}
	return new(big.Int).Set(tpk.vi[i-1]), nil
}

// Index returns the party index i in [1, N].
func (ks *KeyShare) Index() int { return ks.index }

// PublicKey returns the threshold public key the share belongs to.
func (ks *KeyShare) PublicKey() *ThresholdPublicKey { return ks.pub }

func factorial(n int) *big.Int {
	return new(big.Int).MulRange(1, int64(max(n, 1)))
}

// newThresholdPublicKey checks the public parameters and precomputes Delta
// and (4 Delta^2)^-1 mod n.
func newThresholdPublicKey(pk *PublicKey, parties, threshold int, v *big.Int, vi []*big.Int) (*ThresholdPublicKey, error) {
	if parties < 1 || parties > MaxParties {
		return nil, fmt.Errorf("%d parties, want 1 to %d", parties, MaxParties)
	}
	if threshold < 1 || threshold > parties {
		return nil, fmt.Errorf("threshold %d, want 1 to %d parties", threshold, parties)
	}
	if len(vi) != parties {
		return nil, fmt.Errorf("%d verification keys for %d parties", len(vi), parties)
	}
	if err := pk.checkVerificationKey("verification base v", v); err != nil {
		return nil, err
	}
	keys := make([]*big.Int, parties)
	for i, x := range vi {
		if err := pk.checkVerificationKey(fmt.Sprintf("verification key v_%d", i+1), x); err != nil {
			return nil, err
		}
		keys[i] = new(big.Int).Set(x)
	}
	delta := factorial(parties)
	inv := new(big.Int).Mul(delta, delta)
	inv.Lsh(inv, 2)
	if inv.ModInverse(inv, pk.n) == nil {
		return nil, errors.New("4 Delta^2 is not invertible modulo n (a factor of n is at most N)")
	}
	tpk := &ThresholdPublicKey{
		PublicKey:  *pk,
		parties:    parties,
		threshold:  threshold,
		v:          new(big.Int).Set(v),
		vi:         keys,
		delta:      delta,
		combineInv: inv,
	}
	tpk.tid = sha256.Sum256(tpk.marshal())
	return tpk, nil
}

// checkVerificationKey checks what anyone can check of the verification
// base v and the keys v_i without the factorisation: x is in Z*_{n^2}
// (0 < x < n^2, gcd(x, n) = 1), x^2 != 1 mod n^2 (this rejects 1, n^2-1 = -1
// and the two other square roots of 1, elements of order at most 2 against
// which a proof would show nothing: with v_i = 1 a party "proves" the
// partial decryption c_i = 1 or -1 whatever its share), and the Jacobi
// symbol (x/n) is 1, a necessary condition for x to be a square.
func (pk *PublicKey) checkVerificationKey(name string, x *big.Int) error {
	if err := pk.checkUnit(x); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if x.Cmp(bigOne) == 0 {
		return fmt.Errorf("%s = 1 (the identity: a proof against it shows nothing)", name)
	}
	if new(big.Int).Add(x, bigOne).Cmp(pk.nSquared) == 0 {
		return fmt.Errorf("%s = n^2-1 = -1 mod n^2 (order 2: a proof against it shows nothing)", name)
	}
	if sq := new(big.Int).Mul(x, x); sq.Mod(sq, pk.nSquared).Cmp(bigOne) == 0 {
		return fmt.Errorf("%s is a square root of 1 mod n^2 (order 2: a proof against it shows nothing)", name)
	}
	if big.Jacobi(new(big.Int).Mod(x, pk.n), pk.n) != 1 {
		return fmt.Errorf("%s: Jacobi symbol modulo n is not 1, so it is not a square", name)
	}
	return nil
}

// GenerateThresholdKey generates two safe primes for a modulus of bits
// bits (a multiple of 256 from MinModulusBits to 8192) and deals an
// (N = parties, t = threshold) key from them; see DealThreshold. ctx cancels
// the prime search.
func GenerateThresholdKey(ctx context.Context, random io.Reader, bits, parties, threshold int) (*ThresholdPublicKey, []*KeyShare, error) {
	if bits < MinModulusBits || bits > maxModulusBits || bits%256 != 0 {
		return nil, nil, fmt.Errorf("paillier: generate threshold key: %d bits: want a multiple of 256 in [%d, %d]", bits, MinModulusBits, maxModulusBits)
	}
	if parties < 1 || parties > MaxParties || threshold < 1 || threshold > parties {
		return nil, nil, fmt.Errorf("paillier: generate threshold key: (N, t) = (%d, %d): want 1 <= t <= N <= %d", parties, threshold, MaxParties)
	}
	p, q, err := GenerateSafePrimePair(ctx, random, bits, 0, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("paillier: generate threshold key: %w", err)
	}
	return DealThreshold(random, p, q, parties, threshold)
}

// DealThreshold is the trusted dealer: from two safe primes p and q of
// equal length, at least 2^(|pq|/2 - 100) apart, it builds an (N = parties, t = threshold) threshold key
// and returns the public key and the N shares, to be handed to their owners
// over private channels; the dealer must then erase p, q and the shares.
//
// With p = 2p'+1, q = 2q'+1, n = pq and m = p'q', the secret is d with
// d = 0 mod m and d = 1 mod n; f(X) = d + a_1 X + ... + a_{t-1} X^(t-1) with
// a_j uniform in [0, nm), and s_i = f(i) mod nm. v is a random square in
// Z*_{n^2}, checked to generate the whole (cyclic) group of squares, of order
// nm; v_i = v^(Delta s_i).
func DealThreshold(random io.Reader, p, q *big.Int, parties, threshold int) (*ThresholdPublicKey, []*KeyShare, error) {
	return dealThreshold(random, p, q, parties, threshold, MinModulusBits)
}

func dealThreshold(random io.Reader, p, q *big.Int, parties, threshold, minBits int) (*ThresholdPublicKey, []*KeyShare, error) {
	if random == nil {
		return nil, nil, errors.New("paillier: deal: nil random source")
	}
	if parties < 1 || parties > MaxParties || threshold < 1 || threshold > parties {
		return nil, nil, fmt.Errorf("paillier: deal: (N, t) = (%d, %d): want 1 <= t <= N <= %d", parties, threshold, MaxParties)
	}
	if p == nil || q == nil {
		return nil, nil, errors.New("paillier: deal: nil prime")
	}
	if err := checkPrimePair(p, q); err != nil {
		return nil, nil, fmt.Errorf("paillier: deal: %w", err)
	}
	for k, x := range []*big.Int{p, q} {
		if err := CheckSafePrime(x); err != nil {
			return nil, nil, fmt.Errorf("paillier: deal: %s: %w", []string{"p", "q"}[k], err)
		}
	}
	sk, err := buildPrivateKey(p, q, minBits) // primality checked above
	if err != nil {
		return nil, nil, fmt.Errorf("paillier: deal: %w", err)
	}
	pk := &sk.PublicKey
	n := pk.n
	pp := new(big.Int).Rsh(p, 1)
	qp := new(big.Int).Rsh(q, 1)
	if bound := big.NewInt(int64(parties)); pp.Cmp(bound) <= 0 || qp.Cmp(bound) <= 0 {
		return nil, nil, fmt.Errorf("paillier: deal: primes too small for %d parties", parties)
	}
	m := new(big.Int).Mul(pp, qp)
	nm := new(big.Int).Mul(n, m)
	// d = m * (m^-1 mod n): d = 0 mod m, d = 1 mod n.
	mInv := new(big.Int).ModInverse(m, n)
	if mInv == nil {
		return nil, nil, errors.New("paillier: deal: m not invertible modulo n")
	}
	d := new(big.Int).Mul(m, mInv)
	coeffs := make([]*big.Int, threshold)
	coeffs[0] = d
	for j := 1; j < threshold; j++ {
		if coeffs[j], err = rand.Int(random, nm); err != nil {
			return nil, nil, fmt.Errorf("paillier: deal: reading randomness: %w", err)
		}
	}
	// v: a random square that generates the squares of Z*_{n^2}, i.e. whose
	// order nm = p q p' q' is not reduced by any of the four prime factors.
	var v *big.Int
	for attempt := 0; ; attempt++ {
		if attempt == 64 {
			return nil, nil, errors.New("paillier: deal: random source does not yield a generator of the squares")
		}
		r, err := rand.Int(random, pk.nSquared)
		if err != nil {
			return nil, nil, fmt.Errorf("paillier: deal: reading randomness: %w", err)
		}
		if r.Sign() == 0 || new(big.Int).GCD(nil, nil, r, n).Cmp(bigOne) != 0 {
			continue
		}
		cand := r.Mul(r, r)
		cand.Mod(cand, pk.nSquared)
		if generatesSquares(cand, nm, pk.nSquared, p, q, pp, qp) {
			v = cand
			break
		}
	}
	delta := factorial(parties)
	shares := make([]*KeyShare, parties)
	vi := make([]*big.Int, parties)
	exp := new(big.Int)
	for i := 1; i <= parties; i++ {
		s := evalPoly(coeffs, int64(i), nm)
		exp.Mul(delta, s)
		vi[i-1] = new(big.Int).Exp(v, exp, pk.nSquared)
		shares[i-1] = &KeyShare{index: i, s: s}
	}
	tpk, err := newThresholdPublicKey(pk, parties, threshold, v, vi)
	if err != nil {
		return nil, nil, fmt.Errorf("paillier: deal: %w", err)
	}
	for _, s := range shares {
		s.pub = tpk
	}
	return tpk, shares, nil
}

// generatesSquares reports whether v (a square) has order exactly nm in
// Z*_{n^2}: v^(nm/x) != 1 for each prime x in {p, q, p', q'}.
func generatesSquares(v, nm, nSq *big.Int, primes ...*big.Int) bool {
	e := new(big.Int)
	for _, x := range primes {
		e.Quo(nm, x)
		if new(big.Int).Exp(v, e, nSq).Cmp(bigOne) == 0 {
			return false
		}
	}
	return true
}

// evalPoly evaluates sum coeffs[j] x^j mod mod by Horner's rule.
func evalPoly(coeffs []*big.Int, x int64, mod *big.Int) *big.Int {
	acc := new(big.Int)
	bx := big.NewInt(x)
	for j := len(coeffs) - 1; j >= 0; j-- {
		acc.Mul(acc, bx)
		acc.Add(acc, coeffs[j])
		acc.Mod(acc, mod)
	}
	return acc
}

// Verify checks the share against its verification key: v^(Delta s_i) = v_i.
// Run it when loading a share from disk.
func (ks *KeyShare) Verify() error {
	if ks == nil || ks.pub == nil || ks.s == nil {
		return errors.New("paillier: key share: incomplete")
	}
	e := new(big.Int).Mul(ks.pub.delta, ks.s)
	if new(big.Int).Exp(ks.pub.v, e, ks.pub.nSquared).Cmp(ks.pub.vi[ks.index-1]) != 0 {
		return fmt.Errorf("paillier: key share %d does not match its verification key", ks.index)
	}
	return nil
}

// PartialDecryption is party Index's decryption share c_i = c^(2 Delta s_i)
// mod n^2 of one ciphertext, with a non-interactive proof that it was
// computed with the share behind v_i.
type PartialDecryption struct {
	pub   *ThresholdPublicKey
	index int
	ci    *big.Int
	proof *Proof
}

// Index returns the party index of the partial decryption.
func (pd *PartialDecryption) Index() int { return pd.index }

// Value returns a copy of c_i.
func (pd *PartialDecryption) Value() *big.Int { return new(big.Int).Set(pd.ci) }

// Decrypt computes this party's partial decryption of ct with its proof of
// correctness; random supplies the proof's randomness (crypto/rand).
//
// Decrypt decrypts whatever it is given: a holder that calls it on
// ciphertexts received from others is a decryption oracle for the sender.
// Holders in a protocol use DecryptSum, which checks that the ciphertext is
// the sum of enough distinct contributions.
func (ks *KeyShare) Decrypt(random io.Reader, ct *Ciphertext) (*PartialDecryption, error) {
	if ks == nil || ks.pub == nil || ks.s == nil {
		return nil, errors.New("paillier: partial decryption: nil or uninitialised key share")
	}
	tpk := ks.pub
	if err := tpk.owns(ct); err != nil {
		return nil, fmt.Errorf("paillier: partial decryption by party %d: %w", ks.index, err)
	}
	x := new(big.Int).Mul(tpk.delta, ks.s) // Delta s_i
	e := new(big.Int).Lsh(x, 1)            // 2 Delta s_i
	ci := new(big.Int).Exp(ct.c, e, tpk.nSquared)
	proof, err := tpk.prove(random, ks.index, ct.c, ci, x)
	if err != nil {
		return nil, fmt.Errorf("paillier: partial decryption by party %d: %w", ks.index, err)
	}
	return &PartialDecryption{pub: tpk, index: ks.index, ci: ci, proof: proof}, nil
}

// ErrRefused is returned (wrapped) by KeyShare.DecryptSum when the
// ciphertext it is asked to decrypt is not shown to be the sum of enough
// distinct contributions.
var ErrRefused = errors.New("refused to partially decrypt")

// DecryptSum is Decrypt for a share holder that checks what it decrypts. A
// holder that partially decrypts whatever it is sent is a decryption oracle
// for whoever sends it ciphertexts: an aggregator that forwards a single
// teacher's vote (or any other ciphertext) to t holders reads it. DecryptSum
// partially decrypts sum only if
//
//   - minContributors >= 2 (a "sum" of one ciphertext is an individual
//     input) and len(contributors) >= minContributors;
//   - every contributor is a ciphertext under this key and no two are equal
//     (a repeated ciphertext would weight one input: c^2 decrypts to 2m);
//   - sum is exactly the product of the contributors modulo n^2, which the
//     holder recomputes (PublicKey.Sum).
//
// Otherwise it returns an error wrapping ErrRefused and computes nothing.
// In DPPP, minContributors is the number of honest teachers whose noise the
// privacy calibration assumes to be in every decrypted sum (PRIVACY-NOTES
// item 24): fewer contributors means less noise than the guarantee needs.
//
// What DecryptSum cannot check, and the calling protocol must: that each
// contributor ciphertext really comes from a distinct, legitimate party
// (authenticate them, e.g. signatures over the query identifier and the
// ciphertext; an aggregator can otherwise pad a victim's vote with
// encryptions of zero it made itself, or with a rerandomised copy of the
// victim's vote, which is not byte-equal to it), and that the holder has not
// already decrypted another sum that shares contributors with this one (two
// sums that differ in one contributor reveal that contributor's input by
// subtraction): decrypt at most one sum per query, and use each contributor
// ciphertext in at most one decrypted sum.
func (ks *KeyShare) DecryptSum(random io.Reader, sum *Ciphertext, contributors []*Ciphertext, minContributors int) (*PartialDecryption, error) {
	if ks == nil || ks.pub == nil || ks.s == nil {
		return nil, errors.New("paillier: partial decryption: nil or uninitialised key share")
	}
	tpk := ks.pub
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("paillier: partial decryption by party %d: %w: %s", ks.index, ErrRefused, fmt.Sprintf(format, args...))
	}
	if minContributors < 2 {
		return nil, refuse("minimum of %d contributors: a sum of fewer than 2 ciphertexts is an individual input", minContributors)
	}
	if len(contributors) < minContributors {
		return nil, refuse("%d contributors, fewer than the minimum %d", len(contributors), minContributors)
	}
	if err := tpk.owns(sum); err != nil {
		return nil, refuse("sum: %v", err)
	}
	seen := make(map[string]int, len(contributors))
	for k, ct := range contributors {
		if err := tpk.owns(ct); err != nil {
			return nil, refuse("contributor %d: %v", k, err)
		}
		key := string(ct.c.Bytes())
		if j, dup := seen[key]; dup {
			return nil, refuse("contributor %d repeats contributor %d", k, j)
		}
		seen[key] = k
	}
	prod, err := tpk.Sum(contributors...)
	if err != nil {
		return nil, refuse("%v", err)
	}
	if prod.c.Cmp(sum.c) != 0 {
		return nil, refuse("the ciphertext is not the product of the %d listed contributors", len(contributors))
	}
	return ks.Decrypt(random, sum)
}

// VerifyPartial checks that pd is a correct partial decryption of ct by
// party pd.Index: c_i in Z*_{n^2} and a valid proof that
// log_{c^4}(c_i^2) = log_v(v_i).
func (tpk *ThresholdPublicKey) VerifyPartial(ct *Ciphertext, pd *PartialDecryption) error {
	if tpk == nil {
		return fmt.Errorf("paillier: verify partial decryption: %w", errNoKey)
	}
	if err := tpk.checkClaim(Claim{Ciphertext: ct, Partial: pd}); err != nil {
		return err
	}
	if err := tpk.verify(pd.proof, pd.index, ct.c, pd.ci); err != nil {
		return fmt.Errorf("paillier: verify partial decryption of party %d: %w", pd.index, err)
	}
	return nil
}

// ErrTooFewShares is returned (wrapped) by Combine when fewer than t valid
// partial decryptions are available.
var ErrTooFewShares = errors.New("too few valid partial decryptions")

// Rejection records a partial decryption that Combine skipped and why.
type Rejection struct {
	Index int // party index as claimed by the partial decryption (0 if nil)
	Err   error
}

// Combination is the result of Combine.
type Combination struct {
	Plaintext *big.Int    // in [0, n)
	Used      []int       // the t party indices interpolated, ascending
	Rejected  []Rejection // invalid, duplicate or nil entries examined, by index
}

// CombineOptions select the algorithms of CombineWith. The zero value is
// the fast path, which Combine uses; the other settings are the reference
// (naive) algorithms, kept as options so that benchmarks and tests measure
// and check the same code.
type CombineOptions struct {
	// ProofByProof verifies each proof alone (VerifyPartial, in parallel)
	// instead of all at once (VerifyPartials).
	ProofByProof bool
	// NaiveInterpolation computes prod c_i^(2 mu_i) with one
	// exponentiation per share instead of one multi-exponentiation with
	// the common factor of the mu_i taken out.
	NaiveInterpolation bool
}

// Combine recovers the plaintext of ct from any t valid partial
// decryptions in parts. Each one's proof is verified; invalid, duplicate and
// nil entries are skipped and reported in Rejected, the t valid ones with
// the smallest indices are used (shares are examined in ascending index
// order until t valid ones are found; later ones are neither verified nor
// reported). With S those indices and
// mu_i = Delta prod_{j in S, j != i} j/(j-i) (an integer),
// c' = prod c_i^(2 mu_i) = c^(4 Delta^2 d) = 1 + 4 Delta^2 m n mod n^2, so
// m = L(c') (4 Delta^2)^-1 mod n. The proof's equations speak about c_i^2
// only, but its challenge hashes c_i itself, so a c_i changed by a factor of
// order 2 (such as -c_i) is rejected too; the even exponent 2 mu_i would
// remove such a factor anyway. Combine is CombineWith with the zero
// options: proofs verified in batches, interpolation by
// multi-exponentiation.
func (tpk *ThresholdPublicKey) Combine(ct *Ciphertext, parts []*PartialDecryption) (*Combination, error) {
	return tpk.CombineWith(ct, parts, CombineOptions{})
}

// CombineWith is Combine with a choice of algorithms; every choice gives
// the same result.
func (tpk *ThresholdPublicKey) CombineWith(ct *Ciphertext, parts []*PartialDecryption, opt CombineOptions) (*Combination, error) {
	if tpk == nil {
		return nil, fmt.Errorf("paillier: combine: %w", errNoKey)
	}
	if err := tpk.owns(ct); err != nil {
		return nil, fmt.Errorf("paillier: combine: %w", err)
	}
	res := &Combination{}
	valid := map[int]*PartialDecryption{}
	// Verify in ascending index order and stop at t valid ones: the proofs
	// are the expensive part, and later shares would not be used. Each
	// round verifies (in one batch, or one by one in parallel) as many
	// candidates as valid shares are still missing.
	queue := slices.Clone(parts)
	slices.SortStableFunc(queue, func(a, b *PartialDecryption) int {
		return partIndex(a) - partIndex(b)
	})
	for len(valid) < tpk.threshold && len(queue) > 0 {
		need := tpk.threshold - len(valid)
		var batch, deferred []*PartialDecryption
		inBatch := map[int]bool{}
		for len(queue) > 0 && len(batch) < need {
			pd := queue[0]
			queue = queue[1:]
			switch {
			case pd == nil:
				res.Rejected = append(res.Rejected, Rejection{Err: errors.New("nil partial decryption")})
			case valid[pd.index] != nil:
				res.Rejected = append(res.Rejected, Rejection{Index: pd.index, Err: errors.New("duplicate party index")})
			case inBatch[pd.index]:
				deferred = append(deferred, pd) // verify after the first copy
			default:
				inBatch[pd.index] = true
				batch = append(batch, pd)
			}
		}
		queue = append(deferred, queue...)
		var errs []error
		if opt.ProofByProof {
			errs = tpk.verifyEach(ct, batch)
		} else {
			claims := make([]Claim, len(batch))
			for k, pd := range batch {
				claims[k] = Claim{Ciphertext: ct, Partial: pd}
			}
			errs = tpk.VerifyPartials(claims)
		}
		for k, pd := range batch {
			if errs[k] != nil {
				res.Rejected = append(res.Rejected, Rejection{Index: pd.index, Err: errs[k]})
				continue
			}
			valid[pd.index] = pd
		}
	}
	slices.SortStableFunc(res.Rejected, func(a, b Rejection) int { return a.Index - b.Index })
	if len(valid) < tpk.threshold {
		var why []string
		for _, r := range res.Rejected {
			why = append(why, fmt.Sprintf("party %d: %v", r.Index, r.Err))
		}
		detail := ""
		if len(why) > 0 {
			detail = "; rejected: " + strings.Join(why, "; ")
		}
		return res, fmt.Errorf("paillier: combine: %w: %d valid, need %d%s", ErrTooFewShares, len(valid), tpk.threshold, detail)
	}
	idx := make([]int, 0, len(valid))
	for i := range valid {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	idx = idx[:tpk.threshold]
	cs := make([]*big.Int, len(idx))
	for k, i := range idx {
		cs[k] = valid[i].ci
	}
	interp := tpk.interpolate
	if opt.NaiveInterpolation {
		interp = tpk.interpolateNaive
	}
	m, err := interp(idx, cs)
	if err != nil {
		return res, fmt.Errorf("paillier: combine: %w", err)
	}
	res.Plaintext = m
	res.Used = idx
	return res, nil
}

func partIndex(pd *PartialDecryption) int {
	if pd == nil {
		return 0
	}
	return pd.index
}

// lagrangeDelta returns mu_i = Delta prod_{j in S, j != i} j / (j - i), an
// exact integer because Delta = N! is divisible by prod (j - i).
func lagrangeDelta(delta *big.Int, set []int, i int) (*big.Int, error) {
	num := new(big.Int).Set(delta)
	den := big.NewInt(1)
	for _, j := range set {
		if j == i {
			continue
		}
		num.Mul(num, big.NewInt(int64(j)))
		den.Mul(den, big.NewInt(int64(j-i)))
	}
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	if r.Sign() != 0 { // unreachable for distinct indices in [1, N]
		return nil, fmt.Errorf("Lagrange coefficient of party %d in %v is not an integer", i, set)
	}
	return q, nil
}

// verifyEach verifies the partial decryptions of ct one by one, in
// parallel.
func (tpk *ThresholdPublicKey) verifyEach(ct *Ciphertext, parts []*PartialDecryption) []error {
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for k, pd := range parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			errs[k] = tpk.VerifyPartial(ct, pd)
			<-sem
		}()
	}
	wg.Wait()
	return errs
}

// interpolate combines partial decryptions cs of parties set (distinct, in
// [1, N]) without verifying them: c' = prod c_i^(2 mu_i), computed as
// (prod c_i^(mu_i/g))^(2g) with g = gcd of the mu_i, by one
// multi-exponentiation. The mu_i share a large common factor (for
// S = {1..t}, mu_i = Delta (-1)^(i-1) C(t, i), so g >= Delta and the
// exponents mu_i/g have at most t bits instead of |Delta| + t log2 N), and
// the multi-exponentiation shares the squarings among the t bases.
func (tpk *ThresholdPublicKey) interpolate(set []int, cs []*big.Int) (*big.Int, error) {
	acc, err := tpk.combinedFast(set, cs)
	if err != nil {
		return nil, err
	}
	return tpk.decodeCombined(acc)
}

// combinedFast returns c' = prod c_i^(2 mu_i) mod n^2 as interpolate
// computes it.
func (tpk *ThresholdPublicKey) combinedFast(set []int, cs []*big.Int) (*big.Int, error) {
	mus, err := tpk.lagrangeAll(set)
	if err != nil {
		return nil, err
	}
	g := new(big.Int)
	for _, mu := range mus {
		g.GCD(nil, nil, g, new(big.Int).Abs(mu))
	}
	exps := make([]*big.Int, len(mus))
	for k, mu := range mus {
		exps[k] = new(big.Int).Quo(mu, g)
	}
	acc, err := multiExpSigned(cs, exps, tpk.nSquared)
	if err != nil {
		return nil, fmt.Errorf("partial decryptions: %w", err)
	}
	return acc.Exp(acc, g.Lsh(g, 1), tpk.nSquared), nil
}

// interpolateNaive is interpolate with one exponentiation per share (the
// reference for tests and benchmarks).
func (tpk *ThresholdPublicKey) interpolateNaive(set []int, cs []*big.Int) (*big.Int, error) {
	acc, err := tpk.combinedNaive(set, cs)
	if err != nil {
		return nil, err
	}
	return tpk.decodeCombined(acc)
}

// lagrangeAll returns mu_i for every i in set.
func (tpk *ThresholdPublicKey) lagrangeAll(set []int) ([]*big.Int, error) {
	mus := make([]*big.Int, len(set))
	for k, i := range set {
		mu, err := lagrangeDelta(tpk.delta, set, i)
		if err != nil {
			return nil, err
		}
		mus[k] = mu
	}
	return mus, nil
}

// combinedNaive returns c' = prod c_i^(2 mu_i) mod n^2, one exponentiation
// per share.
func (tpk *ThresholdPublicKey) combinedNaive(set []int, cs []*big.Int) (*big.Int, error) {
	mus, err := tpk.lagrangeAll(set)
	if err != nil {
		return nil, err
	}
	acc := big.NewInt(1)
	t := new(big.Int)
	for k, i := range set {
		e := new(big.Int).Lsh(mus[k], 1) // 2 mu_i
		base := cs[k]
		if e.Sign() < 0 {
			base = new(big.Int).ModInverse(base, tpk.nSquared)
			if base == nil {
				return nil, fmt.Errorf("partial decryption of party %d is not invertible", i)
			}
			e.Neg(e)
		}
		t.Exp(base, e, tpk.nSquared)
		acc.Mul(acc, t)
		acc.Mod(acc, tpk.nSquared)
	}
	return acc, nil
}

// decodeCombined returns m from c' = 1 + 4 Delta^2 m n mod n^2.
func (tpk *ThresholdPublicKey) decodeCombined(c *big.Int) (*big.Int, error) {
	acc := new(big.Int).Sub(c, bigOne)
	q, r := new(big.Int).QuoRem(acc, tpk.n, new(big.Int))
	if r.Sign() != 0 {
		return nil, errors.New("combined value is not 1 mod n: partial decryptions are inconsistent")
	}
	q.Mul(q, tpk.combineInv)
	return q.Mod(q, tpk.n), nil
}

// String describes the share without revealing it, so that logging a
// KeyShare (with %v) cannot leak the secret.
func (ks *KeyShare) String() string {
	if ks == nil || ks.pub == nil {
		return "paillier.KeyShare(nil)"
	}
	id := ks.pub.ID()
	return fmt.Sprintf("paillier.KeyShare(party %d of %d, threshold %d, key %x, secret redacted)", ks.index, ks.pub.parties, ks.pub.threshold, id[:8])
}

// GoString is String, for %#v.
func (ks *KeyShare) GoString() string { return ks.String() }
