// Package dppp implements distributed privacy-preserving prediction (the
// DPPP seed, corrected by PRIVACY-NOTES items 12-16 and 24 and by issue 22)
// as transport-free state machines: N teachers, each with its own model
// and threshold Paillier key share, answer classification queries; an
// untrusted aggregator learns only noisy vote histograms; a client gets
// labels (argmax) and, if asked, the noisy histograms. There is no network
// code here: one Driver runs the aggregator's side over a Link — Run wires
// it to in-process teachers by channels, package dpppnet to a transport
// hub (gRPC with mutual TLS, or its in-memory hub).
//
// # Trust model
//
// The aggregator is not trusted and may collude with up to C teachers
// (Config.Colluders): the coalition sees every message the aggregator sees
// and holds those teachers' key shares, noise shares and signing keys, and
// deviates from the protocol as it likes. Up to A teachers (Config.Absent,
// a separate parameter) may be absent from a batch, or be left out by the
// aggregator. The roster, the key (dealt by a trusted dealer) and the
// certificates (a CA the aggregator does not hold) are given. Required:
// C < t ≤ N − A (so H = N − A − C ≥ 1). Defaults: t = ⌊2N/3⌋ (the seed's),
// A = N − t (every absence the threshold tolerates) and C = ⌈N/3⌉ − 1 (the
// largest C < N/3, the usual bound for a coalition among the parties; with
// these, H = t − C ≥ 1 for every N ≥ 3). Against that coalition:
//
//   - no honest vote is in two different decrypted sums (set signatures),
//     and every decrypted sum holds at least N − A contributors of which at
//     least H are honest, with noise calibrated for H honest shares, so the
//     coalition learns nothing about an honest teacher's vote beyond noisy
//     histograms that are (ε, δ)-DP each (the coalition's own shares are
//     known to it and subtracted: post-processing);
//   - every teacher's budget is charged for every answered query its vote
//     is in, whatever the aggregator does (charged before the vote is
//     sent);
//   - what is not protected: the query rows (every party sees them);
//     integrity (no per-slot range proofs: a teacher, honest or not, can
//     encrypt any plaintext it knows, e.g. 1000 votes for one class, and so
//     move a histogram by more than its one vote — that breaks the labels,
//     not the privacy of the others, whose shares it cannot subtract
//     without knowing them); availability (a malicious aggregator can
//     abandon batches and burn budget: each re-vote is charged again);
//     more than C colluders, or t key holders together, can decrypt
//     anything.
//
// # Parameters
//
// Config is what each party configures itself (roster, t, C, A, K, noise
// kind, per-query (ε, δ), total budget, queries per ciphertext, model
// fingerprint). Calibrate derives Params from a Config and the threshold
// public key: MinContributors = N − A, Honest = H = N − A − C, the noise
// (below), the packing layout (QPC queries × K classes per plaintext, slot
// width from the public maxima: N votes plus all shares), MaxQueries from
// the budget. Params have a canonical encoding and a Hash; every teacher
// recomputes Params from its own Config (Teacher.Accept) and refuses an
// offer that differs, naming the field (*MismatchError: "colluders",
// "absent", "honest", …). Report prints C, A, N − A and H first.
//
// # Noise (sensitivity L1 2, L2 √2, L∞ 1: item 12)
//
//   - binomial: n = accounting.BinomialHistogramCoins(ε, δ, q) coins per
//     class: the least n for which q queries of the histogram (both moved
//     counts together, exact privacy-loss distribution; issue 27) are
//     (ε, δ)-DP — q = 1 at the per-query (ε, δ), or q = Config.Queries at
//     the total budget. 115 coins for (1, 1e-5), where (ε/2, δ/2) per count
//     composed basically needed 223. Each teacher adds Coins = ⌈n/H⌉ fair
//     coins per class, so any H honest shares hold ≥ n. Shares are kept as
//     non-negative integers (vote + coins ∈ [0, Coins+1]); the public mean
//     (contributors·Coins/2) is subtracted after decryption (Params.Tally).
//     TestPrivacyByTeachers and TestPerQueryCalibrationPLD recompute the
//     exact δ of the histogram by enumeration.
//   - dgauss: each teacher adds N_Z(0, σ²) per class with σ =
//     accounting.DGaussSumHistogramSigma(ε, δ, H, q): the exact PLD of the
//     sum of H shares, which is not a
//     discrete Gaussian (item 13). Values are packed with a public offset
//     (paillier.Packing stores x + NoiseBound, NoiseBound = ⌈20σ⌉; a larger
//     draw, probability below 2^-280, is an error, never a silent clamp).
//
// More honest shares than H only add independent noise to a sum that is
// already private (post-processing).
//
// # Budget (item 16; issue 22 item 4)
//
// Params.Composed(k) is the guarantee of k answered queries: the exact
// privacy-loss distribution of one query of the implemented histogram
// composed k times (pessimistic grid PLDGrid, cached powers: pldacct.go),
// converted at the budget's δ and rounded up. MaxQueries is the largest k
// within the budget. Params.Forecast predicts, from public quantities, how
// often a label equals the teachers' plurality (forecast.go). A teacher
// charges its count and its Ledger for a batch's queries in HandleQuery,
// before its vote leaves, and never votes in a batch it cannot pay for;
// decrypting charges nothing. A vote is in at most one decrypted sum (the
// set signatures), so the charges cover every answer it is in, whichever
// teachers decrypt: rotating decryptors cannot spend a teacher's budget
// behind its back (TestAttackLedgerRotation). A vote in a batch that is
// then abandoned was charged too (conservative). The aggregator charges
// its own Ledger when it closes a batch.
//
// # Protocol (one batch of ≤ QPC queries)
//
//	step  from → to                  message       content
//	0     aggregator → teachers      Offer         Params            (once)
//	      teacher → aggregator       Accept        session, Hash      or Refuse naming the field
//	1     aggregator → teachers      Query         batch ID, rows
//	2     teacher → aggregator       Vote          Enc(pack(one-hot votes + noise shares)), proof of plaintext knowledge
//	                                               (charged before it is sent)
//	3     aggregator                 Close         proofs checked (bad votes dropped, named); ≥ N − A votes or refuse
//	      aggregator → contributors  SignSet       the contributor set: IDs, SHA-256 of each vote and proof
//	      contributor → aggregator   SetSignature  its signature of (session, params hash, batch, set)
//	      aggregator                               every contributor signed, or the batch is abandoned
//	                                               (nothing decrypted; its rows voted again in a new batch)
//	4     aggregator → t teachers    Decrypt       sum, votes, proofs, every contributor's set signature
//	      teacher → aggregator       Partial       partial decryption + proof, or Refuse
//	5     aggregator                 Combine       any t valid partials; more teachers asked if some fail
//	6     aggregator → client        Answer        labels (and noisy histograms)
//
// What a teacher checks, in order:
//
//   - Accept: its own calibration of its own Config (every field, C and A
//     included), its name at the position of its key share.
//   - HandleQuery (vote): the session; one vote per batch (a replay of the
//     same rows gets the same vote); its budget (count and Ledger, charged
//     now); then it votes, with a proof bound to
//     VoteContext(session, params hash, batch, its ID).
//   - HandleSignSet: the session; it voted in the batch; the set has ≥ N − A
//     distinct roster IDs in ascending order and its own vote (ciphertext
//     and proof hashes) byte for byte; it signed no other set for this batch
//     (the identical set again gets the same signature). Then it signs
//     (Signer).
//   - HandleDecrypt: the session; it voted in the batch; the request is for
//     exactly the set it signed (so its own vote, ≥ N − A contributors); no
//     listed ciphertext was in a sum of another batch; every other listed
//     contributor's signature of that set verifies (Signer.Verify: its
//     certificate from the deployment's CA names that roster teacher); every
//     listed vote's proof verifies in its contributor's context (one batch
//     check, paillier.VerifyPlaintextProofs); the sum is the product of the
//     listed votes; then paillier's DecryptSum re-checks product and
//     minimum. The same request again gets the same answer.
//
// Why this suffices. A vote with a valid proof is one whose sender knows its
// plaintext (paillier.PlaintextProof, bound to the sender and batch), so the
// coalition's votes are independent of the honest ones: it cannot cancel
// them (E(0)·Π v_h⁻¹), copy or replay them (TestAttackRogueVote). An honest
// teacher signs one set per batch and decrypts only a set every listed
// contributor signed, so two different decrypted sums share no honest vote
// — a global property, not one decryptor's memory (TestAttackDifferencing,
// TestAttackDifferencingNoColluders: A − B of two sums decrypted by two
// disjoint honest quorums). Every decrypted sum has ≥ N − A contributors,
// at most C of them the coalition's: ≥ H honest shares, for which the noise
// is calibrated (TestAttackMinimumHonestShares).
//
// Signatures live here, behind Signer (a *certs.StatementSigner over the
// network, EphemeralSigners — per-run ed25519 keys — in process), so that
// every run checks them. TeacherConfig.Unsigned runs a teacher without
// them, explicitly (NewTeacher refuses neither and both): it then relies
// on its own memory only, and a malicious aggregator can have two sums
// holding its vote decrypted by two quorums; dpppnet.Teach logs it loudly.
// The aggregator verifies partial decryptions (VerifyEach, or
// VerifyInCombine: paillier.VerifyPartials in one batch check, forgers
// named by bisection) and combines any t valid ones, so up to N − t dead,
// refusing or lying teachers after the set is signed do not stop a batch.
//
// # Sizes (2048-bit key: ciphertext 550 bytes, proof of plaintext
// knowledge 1,062 bytes, partial decryption about 2,150 bytes at
// N = 10 and 2,350 at N = 250)
//
// Per teacher and batch: Query (rows), Vote (about 1,670 bytes: ciphertext
// and proof), SignSet (68 bytes per contributor) and SetSignature, and for
// the t decryptors Decrypt (per contributor its ciphertext tail, its proof
// and its set signature with certificate) and Partial. The Decrypt message
// dominates at large N; docs/dppp-performance.md has the measured bytes and
// CPU per answered query before and after issue 22.
package dppp
