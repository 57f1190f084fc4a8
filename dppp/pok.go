package dppp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"

	"github.com/dplearn/dplearn/paillier"
)

// Proofs of plaintext knowledge (issue 22, item 1).
//
// Every vote carries paillier's PlaintextProof, a non-interactive proof
// that its sender knows the plaintext it encrypts, bound to the context
// VoteContext(session, parameters' hash, batch, teacher ID). A vote built
// from other teachers' votes (E(0)·Π v_h⁻¹, which cancels every vote but a
// victim's, or a vote of another teacher or batch replayed or scaled) has
// no such proof unless its maker knows the plaintexts it was built from, so
// the coalition's votes are independent of the honest ones and a sum of
// votes with valid proofs is "honest shares + values the coalition knows".
// The aggregator checks the proofs at Close (one batch check,
// VerifyPlaintextProofs; a failing vote is dropped and named) and every
// decrypting teacher checks all listed contributors' proofs (one batch
// check) before it helps.
//
// This file is the only place dppp touches the proof system.

// voteProofDomain separates DPPP vote contexts from other uses of the
// proof.
const voteProofDomain = "dplearn-dppp-vote-pok-v1"

// VoteContext is the context a vote's proof is bound to: the session, the
// parameters' hash, the batch and the teacher ID (one ciphertext per
// vote, so no index).
func VoteContext(session, paramsHash [32]byte, batch uint64, from uint32) []byte {
	b := make([]byte, 0, len(voteProofDomain)+64+12)
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

// encryptVote encrypts m and proves knowledge of m, bound to ctx, with the
// fast Encryptor if there is one.
func encryptVote(pk *paillier.PublicKey, enc *paillier.Encryptor, random io.Reader, m *big.Int, ctx []byte) (*paillier.Ciphertext, []byte, error) {
	var ct *paillier.Ciphertext
	var proof *paillier.PlaintextProof
	var err error
	if enc != nil {
		ct, proof, err = enc.EncryptWithProof(m, ctx)
	} else {
		ct, proof, err = pk.EncryptWithProof(random, m, ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	b, err := proof.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	return ct, b, nil
}

// verifyVotes checks every claim's proof in one batch; errs[i] is nil for
// a valid one.
func verifyVotes(pk *paillier.PublicKey, claims []voteClaim) []error {
	errs := make([]error, len(claims))
	var batch []paillier.PlaintextClaim
	var at []int
	for i, c := range claims {
		if c.ct == nil {
			errs[i] = errors.New("no ciphertext")
			continue
		}
		pr, err := pk.ParsePlaintextProof(c.proof)
		if err != nil {
			errs[i] = fmt.Errorf("dppp: proof of plaintext knowledge: %w", err)
			continue
		}
		batch = append(batch, paillier.PlaintextClaim{Ciphertext: c.ct, Proof: pr, Context: c.context})
		at = append(at, i)
	}
	for k, err := range pk.VerifyPlaintextProofs(batch) {
		if err != nil {
			errs[at[k]] = fmt.Errorf("dppp: proof of plaintext knowledge does not verify (the sender does not know what its vote encrypts, or the vote is of another teacher, batch or session): %w", err)
		}
	}
	return errs
}
