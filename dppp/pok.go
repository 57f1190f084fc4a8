package dppp

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"

	"github.com/dplearn/dplearn/paillier"
)

// Proofs of plaintext knowledge (PRIVACY-NOTES / issue 22, item 1).
//
// Every vote carries a non-interactive proof that its sender knows the
// plaintext it encrypts, bound (Fiat-Shamir) to the context
// VoteContext(session, params hash, batch, teacher ID). A vote built from
// other teachers' votes (E(0)·Π v_h⁻¹, or a replay of a vote of another
// teacher or batch) has no such proof unless its maker knows the plaintexts
// it was built from, so the coalition's votes are independent of the
// honest ones.
//
// This file is the only place dppp touches the proof system: encryptVote
// and verifyVotes. Until package paillier's proof of plaintext knowledge
// is merged, they implement the textbook Σ-protocol for Paillier
// (Damgård-Jurik, "A generalisation, a simplification and some
// applications of Paillier's probabilistic public-key system", §5):
//
//	prover   x ∈ [0, n), s ∈ Z*_n, a = g^x s^n mod n²
//	         e = H(context, n, c, a) ∈ [0, 2^128)
//	         z = x + e·m mod n, w = s·r^e·g^⌊(x+e·m)/n⌋ mod n
//	verifier g^z w^n = a c^e mod n², a, c, w units, z < n
//
// with g = 1+n (so g^(kn) = 1 mod n²). Special soundness: two accepting
// transcripts (a, e, z, w), (a, e', z', w') with e ≠ e' give m =
// (z − z')/(e − e') mod n, as e − e' < 2^128 is invertible mod n.

// voteProofDomain separates the Fiat-Shamir hash of vote proofs.
const voteProofDomain = "dplearn-dppp-vote-pok-v1"

// VoteContext is the context a vote's proof is bound to: the session, the
// parameters' hash, the batch and the teacher ID.
func VoteContext(session, paramsHash [32]byte, batch uint64, from uint32) []byte {
	b := make([]byte, 0, 64+12+len(voteProofDomain))
	b = append(b, voteProofDomain...)
	b = append(b, session[:]...)
	b = append(b, paramsHash[:]...)
	b = binary.BigEndian.AppendUint64(b, batch)
	b = binary.BigEndian.AppendUint32(b, from)
	return b
}

// voteClaim is one vote to verify: its ciphertext, proof and context.
type voteClaim struct {
	ct      *paillier.Ciphertext
	proof   []byte
	context []byte
}

// encryptVote encrypts m under pk and proves knowledge of m, bound to ctx.
func encryptVote(pk *paillier.PublicKey, random io.Reader, m *big.Int, ctx []byte) (*paillier.Ciphertext, []byte, error) {
	if random == nil {
		random = rand.Reader
	}
	n := pk.N()
	unit := func() (*big.Int, error) {
		g := new(big.Int)
		for range 128 {
			r, err := rand.Int(random, n)
			if err != nil {
				return nil, err
			}
			if r.Sign() != 0 && g.GCD(nil, nil, r, n).Cmp(bigOne) == 0 {
				return r, nil
			}
		}
		return nil, errors.New("dppp: the random source gives no units")
	}
	r, err := unit()
	if err != nil {
		return nil, nil, err
	}
	ct, err := pk.EncryptWithNonce(m, r)
	if err != nil {
		return nil, nil, err
	}
	x, err := rand.Int(random, n)
	if err != nil {
		return nil, nil, err
	}
	s, err := unit()
	if err != nil {
		return nil, nil, err
	}
	a, err := pk.EncryptWithNonce(x, s)
	if err != nil {
		return nil, nil, err
	}
	e := pokChallenge(ctx, n, ct.Value(), a.Value())
	full := new(big.Int).Mul(e, m)
	full.Add(full, x)
	// z = x + e·m mod n; the quotient only multiplies w by g^⌊…⌋ mod n = 1.
	_, z := new(big.Int).QuoRem(full, n, new(big.Int))
	w := new(big.Int).Exp(r, e, n)
	w.Mul(w, s)
	w.Mod(w, n)
	size := (n.BitLen() + 7) / 8
	proof := make([]byte, 0, 4*size)
	proof = append(proof, fixed(a.Value(), 2*size)...)
	proof = append(proof, fixed(z, size)...)
	proof = append(proof, fixed(w, size)...)
	return ct, proof, nil
}

func fixed(x *big.Int, size int) []byte { return x.FillBytes(make([]byte, size)) }

// pokChallenge is the Fiat-Shamir challenge, 128 bits.
func pokChallenge(ctx []byte, n, c, a *big.Int) *big.Int {
	h := sha256.New()
	for _, p := range [][]byte{ctx, n.Bytes(), c.Bytes(), a.Bytes()} {
		var l [4]byte
		binary.BigEndian.PutUint32(l[:], uint32(len(p)))
		h.Write(l[:])
		h.Write(p)
	}
	return new(big.Int).SetBytes(h.Sum(nil)[:16])
}

// verifyVotes checks every claim's proof; errs[i] is nil for a valid one.
func verifyVotes(pk *paillier.PublicKey, claims []voteClaim) []error {
	errs := make([]error, len(claims))
	n, n2 := pk.N(), pk.NSquared()
	size := (n.BitLen() + 7) / 8
	for i, c := range claims {
		if c.ct == nil || len(c.proof) != 4*size {
			errs[i] = fmt.Errorf("dppp: proof of plaintext knowledge of %d bytes, want %d", len(c.proof), 4*size)
			continue
		}
		a := new(big.Int).SetBytes(c.proof[:2*size])
		z := new(big.Int).SetBytes(c.proof[2*size : 3*size])
		w := new(big.Int).SetBytes(c.proof[3*size:])
		g := new(big.Int)
		if a.Sign() == 0 || a.Cmp(n2) >= 0 || g.GCD(nil, nil, a, n).Cmp(bigOne) != 0 ||
			w.Sign() == 0 || w.Cmp(n) >= 0 || g.GCD(nil, nil, w, n).Cmp(bigOne) != 0 || z.Cmp(n) >= 0 {
			errs[i] = errors.New("dppp: proof of plaintext knowledge out of range")
			continue
		}
		e := pokChallenge(c.context, n, c.ct.Value(), a)
		lhs, err := pk.EncryptWithNonce(z, w)
		if err != nil {
			errs[i] = err
			continue
		}
		rhs := new(big.Int).Exp(c.ct.Value(), e, n2)
		rhs.Mul(rhs, a)
		rhs.Mod(rhs, n2)
		if lhs.Value().Cmp(rhs) != 0 {
			errs[i] = errors.New("dppp: proof of plaintext knowledge does not verify (the sender does not know what its vote encrypts, or the vote is of another teacher, batch or session)")
		}
	}
	return errs
}
