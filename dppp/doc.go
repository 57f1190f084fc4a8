// Package dppp implements distributed privacy-preserving prediction (the
// DPPP seed, corrected by PRIVACY-NOTES items 12-16 and 24) as transport-free
// state machines: N teachers, each with its own model and threshold Paillier
// key share, answer classification queries; an untrusted aggregator learns
// only the noisy vote histogram; a client gets labels (argmax) and, if asked,
// the noisy histograms. There is no network code here: Run wires the
// parties by channels in one process; a transport carries the same binary
// messages between processes.
//
// # Parameters
//
// Config is what each party configures itself (roster, t = ⌊2N/3⌋ by
// default, γ = 2/3 by default, K, noise kind, per-query (ε, δ), total budget,
// queries per ciphertext, model fingerprint). Calibrate derives Params from a
// Config and the threshold public key: MinContributors = ⌈γN⌉ (at least t),
// the noise (below), the packing layout (QPC queries × K classes per
// plaintext, slot width from the public maxima: N votes plus all shares),
// MaxQueries from the budget. Params have a canonical encoding and a Hash;
// every teacher recomputes Params from its own Config (Teacher.Accept) and
// refuses an offer that differs, naming the field (*MismatchError).
//
// # Noise (sensitivity L1 2, L2 √2, L∞ 1: item 12)
//
//   - binomial: n = accounting.BinomialExactN(ε/2, δ/2, 1) coins per class
//     (exact per count; a changed vote moves two counts, composed basically);
//     each teacher adds Coins = ⌈n/⌈γN⌉⌉ fair coins per class, so any ⌈γN⌉
//     honest shares hold ≥ n coins. Shares are kept as non-negative integers
//     (vote + coins ∈ [0, Coins+1]); the public mean (contributors·Coins/2) is
//     subtracted after decryption (Params.Tally). Report prints the seed's
//     Theorem 1 figure and cpSGD's as secondary lines.
//   - dgauss: each teacher adds N_Z(0, σ²) per class with σ =
//     accounting.DDGSigma(ε, δ, ⌈γN⌉ parties, K, L1 2, L2 √2): the sum is not
//     a discrete Gaussian (item 13). Values are packed with a public offset
//     (paillier.Packing stores x + NoiseBound, NoiseBound = ⌈20σ⌉; a larger
//     draw, probability below 2^-280, is an error, never a silent clamp) and
//     the offset is removed by Packing.Decode.
//
// More honest shares than ⌈γN⌉ only add independent noise to a sum that is
// already private (post-processing), so the guarantee holds for any number of
// contributors ≥ MinContributors of which ≥ ⌈γN⌉ are honest.
//
// # Budget (item 16)
//
// Params.Composed(k) is the guarantee of k answered queries: binomial — each
// query is (ε, δ)-DP and k of them compose by the optimal composition of
// Kairouz, Oh & Viswanath at the budget's δ (the tightest bound valid for
// arbitrary (ε, δ)-DP mechanisms; the exact binomial privacy-loss
// distribution composed numerically would be tighter still but is not in
// accounting), or basic composition when smaller; dgauss — k times the
// DDGRDP curve, converted at the budget's δ. MaxQueries is the largest k
// within the budget. The aggregator charges its Ledger (Budget by default)
// when it closes a batch; every teacher keeps its own count against
// MaxQueries and charges its own Ledger before it partially decrypts, so a
// teacher refuses queries past the budget even if the aggregator asks.
//
// # Protocol (one batch of ≤ QPC queries)
//
//	step  from → to                message   content
//	0     aggregator → teachers    Offer     Params            (once)
//	      teacher → aggregator     Accept    session, Hash     or Refuse naming the field
//	1     aggregator → teachers    Query     batch ID, rows
//	2     teacher → aggregator     Vote      Enc(pack(one-hot votes + noise shares))
//	3     aggregator               Close     ≥ MinContributors votes, or refuse (nothing decrypted)
//	      aggregator → t teachers  Decrypt   sum, contributor IDs and their ciphertexts
//	4     teacher → aggregator     Partial   partial decryption + proof, or Refuse
//	5     aggregator               Combine   any t valid partials; more teachers asked if some fail
//	6     aggregator → client      Answer    labels (and noisy histograms)
//
// A teacher partially decrypts (Teacher.HandleDecrypt) only if: the session
// is its own; it voted in the batch and its own ciphertext is listed byte for
// byte; ≥ MinContributors distinct roster contributors (item 24); it has not
// decrypted another sum for that batch (the same sum again gets the same
// answer, charged once) nor a sum that shares a contributor ciphertext with
// this one (two such sums would reveal a vote by subtraction); the sum is the
// product of the listed ciphertexts; its own record and its ledger allow the
// batch's queries. Then paillier's KeyShare.DecryptSum re-checks product and
// minimum. The aggregator verifies proofs (VerifyEach: every proof on
// arrival, naming forgers; VerifyInCombine: Combine verifies in index order
// until t are valid, all in one batch check by default, with forgers named
// by bisection: paillier.VerifyPartials) and combines any t valid partial
// decryptions, so up to N − t dead, refusing or lying teachers do not stop
// a batch. AggregatorOptions.Combine selects the naive reference paths.
//
// # What is not covered
//
// Teachers cannot tell whether the other contributors' ciphertexts come from
// the roster's teachers: the transport authenticates each teacher to the
// aggregator, not to each other, so a malicious aggregator could pad a sum
// with its own encryptions (signatures by teachers over (session, batch,
// ciphertext) would close this; not done). Nothing proves a vote is one-hot
// with bounded noise (paillier has no range proofs). The aggregator is
// trusted to pick t decryptors among the contributors; t colluding key
// holders can decrypt anything.
//
// # Sizes (2048-bit key: ciphertext 550 bytes, partial decryption about
// 2,150 bytes at N = 10 and 2,350 at N = 250: c_i, the proof's two
// commitments and its response)
//
// Per teacher and batch: Query (rows), Vote (about 570 bytes), and for the t
// decryptors Decrypt (C ciphertexts: about 516·C bytes for C contributors,
// in the shared-prefix layout that sends paillier's header and key ID once)
// and Partial. Packed, a batch holds QPC queries (22 at N = 10, K = 10,
// ε = 1; 20 at N = 250), so per query: about 1,000 bytes per teacher at
// N = 10 (measured in TestDigitsFiftyQueries) and 4,449 at N = 250, t = 167
// (BenchmarkProtocol), against the seed's estimate 768·c = 7,680 for c = 10.
// The Decrypt message dominates at large N: a teacher that checks that it
// decrypts the product of the listed votes needs every listed vote, so no
// encoding goes below t·(C−1)·|ciphertext value|/(N·QPC) bytes per teacher
// and query (4,258 at N = C = 250) without weakening that check
// (docs/dppp-performance.md).
package dppp
