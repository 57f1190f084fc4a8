// Package paillier implements the Paillier cryptosystem and (N, t)
// threshold Paillier decryption, as used by DPPP to sum teachers' noisy votes
// so that only the sum is ever decrypted.
//
// # Scheme
//
// Paillier (1999) with generator g = n+1: a plaintext m in Z_n is encrypted
// as c = (1+n)^m r^n mod n^2 with r uniform in Z*_n (PublicKey.Encrypt).
// Ciphertexts multiply to add plaintexts (Add, Sum), a ciphertext raised to
// k multiplies its plaintext by k (MulConst), multiplying by a fresh r^n
// re-randomises (Rerandomize). PrivateKey decrypts with the Chinese
// remainder theorem. Signed integers are balanced residues
// (EncodeSigned/DecodeSigned); Packing puts a vector of bounded counts into
// one plaintext with headroom for the sum of up to MaxParties vectors, and
// reports overflow as an error.
//
// Encryptor is the fast encryptor: the short-exponent, fixed-base variant of
// Damgård, Jurik and Nielsen, several times faster than r^n mod n^2 (see its
// documentation for the security argument); Pool precomputes its
// randomizers in the background. Both serialise their reads of the random
// source, so any io.Reader may be given.
//
// Threshold decryption follows Shoup (2000) as generalised by Damgård and
// Jurik (PKC 2001), with s = 1. A trusted dealer (DealThreshold) takes two
// safe primes p = 2p'+1 and q = 2q'+1, n = pq, m = p'q', picks the secret d
// with d = 0 mod m and d = 1 mod n, and shares it with a random polynomial
// f of degree t-1 over Z_{nm}: party i gets s_i = f(i). It publishes a
// random generator v of the squares of Z*_{n^2} and v_i = v^(Δ s_i),
// Δ = N!. Party i's partial decryption of c is c_i = c^(2Δ s_i) with a
// non-interactive zero-knowledge proof (see Proof) that
// log_{c^4}(c_i^2) = log_v(v_i), whose nonce is hedged: derived from the
// share, the statement and fresh randomness, so that a random source that
// repeats cannot expose the share. Any t valid partial decryptions combine by
// Lagrange interpolation in the exponent (ThresholdPublicKey.Combine);
// invalid or missing ones are skipped and reported. Combine verifies the
// proofs in batches (ThresholdPublicKey.VerifyPartials: one random linear
// combination with 128-bit weights, multi-exponentiation, bisection to name
// the bad shares) and interpolates by one multi-exponentiation;
// CombineOptions selects the proof-by-proof and naive reference paths.
//
// # Threat model
//
// What the scheme protects: the plaintexts of individual ciphertexts. An
// adversary that sees every ciphertext and fewer than t key shares learns
// nothing about any plaintext beyond what decrypted sums reveal, under the
// decisional composite residuosity assumption (and, for Encryptor, the
// short-exponent assumption stated there). Parties are assumed
// honest-but-curious: they follow the protocol but try to learn from what
// they see. The aggregator is honest-but-curious too (DPPP's model): it
// decides which ciphertexts are combined and decrypted, so a dishonest
// aggregator with t colluding share holders could decrypt an individual
// vote. t is therefore a trust assumption, not only a fault tolerance.
//
// A share holder that partially decrypts whatever it is sent is a
// decryption oracle: KeyShare.Decrypt computes c^(2 Delta s_i) for any c, so
// an aggregator that sends one teacher's vote (instead of the sum) to t
// honest holders reads that vote, without any holder colluding. Holders
// must check what they decrypt: KeyShare.DecryptSum recomputes the product
// of the listed contributors' ciphertexts, requires it to equal the
// ciphertext, refuses repeated contributors and fewer than a minimum the
// caller supplies (at least 2), and only then partially decrypts. It cannot
// tell whether each contributor ciphertext comes from a distinct legitimate
// party (the protocol must authenticate them, or the aggregator pads a
// victim's vote with encryptions of zero) nor whether two requested sums
// differ in a single contributor (their quotient is that contributor's
// vote): a holder decrypts at most one sum per query and uses each
// contributor ciphertext in at most one sum. In DPPP the minimum is the
// number of honest teachers whose noise the calibration assumes
// (PRIVACY-NOTES item 24).
//
// Nor can a holder tell whether a contributor knows what it encrypted: a
// colluding contributor shown the others' ciphertexts can submit
// E(0) prod_{h != victim} v_h^-1 (the sum then decrypts to the victim's
// vote) or v_old^a E(x) built from a public vote of an earlier query.
// PlaintextProof closes this: Encryptor.EncryptWithProof and
// PublicKey.EncryptWithProof attach a zero-knowledge proof of knowledge of
// the plaintext bound to a context (session, query, sender, index), which
// VerifyPlaintextProof and, batched, VerifyPlaintextProofs check; a sum of
// ciphertexts with valid proofs decrypts to the honest plaintexts plus
// values the other provers know.
//
// What the proofs add: against a malicious share holder who sends a wrong
// partial decryption (to corrupt the result, or to bias it by a chosen
// amount), the proof of correct partial decryption makes the forgery
// detectable with overwhelming probability, and Combine still succeeds if t
// honest parties answered. The proofs are statistically zero-knowledge
// (2^-128), so publishing them reveals nothing about the shares; their
// nonces are derived from the share, the statement and fresh randomness
// (see Proof), so a broken or repeating random source does not expose the
// share either (with a nonce drawn from the source alone, two proofs with
// the same nonce give s_i = (z1 - z2)/((e1 - e2) Delta)).
//
// What is not covered:
//   - The range of encrypted inputs. Nothing proves that a teacher encrypted
//     a one-hot vote plus bounded noise: a malicious teacher can encrypt any
//     value in Z_n, e.g. 1000 votes for one class, and skew the histogram
//     (Packing.Decode detects some such values, as slot overflow, not all).
//     Range proofs are future work; until then teachers are trusted with
//     the content of their votes.
//   - A malicious dealer. The dealer knows the factorisation of n and every
//     share; it must be trusted and must erase them after distribution.
//     Distributed key generation is future work.
//   - Side channels. math/big is not constant-time: the running time of
//     exponentiations depends on secret exponents (shares, primes, the
//     encryption randomness) and timing or cache attacks by a co-located
//     adversary are out of scope. Run parties on machines you control.
//   - Erasure of secrets. Shares, primes and randomness live in big.Int
//     values that the garbage collector may copy; they are not zeroed after
//     use. Protect the process memory (no core dumps, no swap to shared
//     disks) on machines that hold shares.
//   - Chosen-ciphertext attacks. Paillier is malleable by design; integrity
//     of the ciphertexts in transit is the transport's job (mutual TLS).
//   - Key sizes below 2048 bits are refused by every decoder and by key
//     generation (MinModulusBits); the seed paper's 1024-bit keys are not
//     supported. The one exception, DealTestThreshold (1024 bits, for the
//     protocol tests of other packages), deals only inside `go test`
//     binaries and its keys cannot be decoded. Every constructor and decoder also refuses moduli that are
//     even, prime, perfect powers or have a prime factor below 2^15, and,
//     where the primes are known (NewPrivateKey, DealThreshold), primes of
//     unequal length or closer than 2^(|n|/2 - 100) (Fermat factoring).
//     Verification keys v, v_i must be units of Z*_{n^2} of order above 2
//     (not 1, not n^2-1) with Jacobi symbol 1.
//
// # Encoding (version 1)
//
// Every object starts with the magic "DPPL", a version byte (1) and a kind
// byte; integers are unsigned big-endian, elements modulo n^2 have the fixed
// width W = ceil(bitlen(n^2)/8) bytes, and decoders reject wrong lengths,
// trailing bytes, non-canonical or weak moduli (see above), elements
// outside Z*_{n^2} and verification keys of order at most 2.
//
//	kind 1  public key            u16 L | n (L bytes, no leading zero)
//	kind 2  ciphertext            key ID (32) | c (W)
//	kind 3  threshold public key  u16 L | n (L) | u16 N | u16 t | v (W) | v_1..v_N (W each)
//	kind 4  key share             u32 K | threshold public key (K bytes) | u16 i | s_i (W)
//	kind 6  partial decryption    threshold key ID (32) | u16 i | c_i (W) | a (W) | b (W) | z (Z)
//	kind 7  plaintext proof       key ID (32) | a (W) | z1 (V) | z2 (V)
//
// Kind 5 was a partial decryption whose proof was (e, z); it is no longer
// read, because batch verification needs the commitments a and b (Proof).
//
// The key ID of a public key is SHA-256 of its encoding (kind 1); that of a
// threshold public key is SHA-256 of its kind-3 encoding. Z =
// ceil((B+1)/8) with B = bitlen(n^2) + 256 + bitlen(N!) + 128 (see Proof).
// V = ceil(bitlen(n)/8); a plaintext proof carries the key ID of the
// Paillier public key (kind 1), also for a threshold key.
//
// # Key files
//
// `dplearn dppp keygen` writes DIR/public.pem (PEM type "DPLEARN PAILLIER
// THRESHOLD PUBLIC KEY", mode 0644) and DIR/share-001.pem ...
// (PEM type "DPLEARN PAILLIER KEY SHARE", mode 0600), each one PEM block
// around the binary encoding above; PEM headers (Key-ID, Party, Parties,
// Threshold, Modulus-Bits) are informational and ignored when reading.
// The loaders open a file once and check it on the open handle: a regular
// file of at most MaxKeyFileBytes bytes and, for LoadKeyShare, not
// accessible to group or others. WriteKeyFiles creates DIR with mode 0700,
// refuses an existing DIR that group or others can access, and writes
// through the opened directory (os.Root). A primes file (--primes,
// --save-primes) holds two lines "p = 0x..." and "q = 0x..." (comments
// start with '#'); keygen refuses the test primes published in dplearn's
// source (internal/pailliertest, which no other module can import).
//
// # References
//
// P. Paillier, Public-key cryptosystems based on composite degree
// residuosity classes, EUROCRYPT 1999. V. Shoup, Practical threshold
// signatures, EUROCRYPT 2000. I. Damgård, M. Jurik, A generalisation, a
// simplification and some applications of Paillier's probabilistic
// public-key system, PKC 2001. I. Damgård, M. Jurik, J. B. Nielsen, A
// generalization of Paillier's public-key system with applications to
// electronic voting, IJIS 2010.
package paillier
