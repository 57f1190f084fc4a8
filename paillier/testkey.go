package paillier

import (
	"errors"
	"io"
	"math/big"
	"testing"
)

// TestModulusBits is the smallest modulus DealTestThreshold accepts: half of
// MinModulusBits, so that the modular exponentiations of protocol tests in
// other packages cost about a sixth of those at 2048 bits. It applies only
// inside a test binary; every decoder, GenerateKey, GenerateThresholdKey,
// NewPrivateKey and DealThreshold keep the MinModulusBits floor.
const TestModulusBits = 1024

// errTestKeyOutsideTest is the refusal of DealTestThreshold in a program
// that is not a `go test` binary.
var errTestKeyOutsideTest = errors.New("paillier: deal test key: keys below 2048 bits are dealt only inside `go test` binaries")

// DealTestThreshold is DealThreshold with the modulus floor lowered to
// TestModulusBits, for the protocol tests of packages built on paillier
// (through internal/pailliertest, on its published primes). It refuses to
// deal anything in a program that is not a test binary (testing.Testing()
// is false in every binary built by `go build`, so the shipped dplearn can
// never hold a key below MinModulusBits from it), and its keys cannot leave
// the process: every decoder refuses moduli below MinModulusBits.
func DealTestThreshold(random io.Reader, p, q *big.Int, parties, threshold int) (*ThresholdPublicKey, []*KeyShare, error) {
	return dealTestThreshold(testing.Testing(), random, p, q, parties, threshold)
}

// dealTestThreshold is DealTestThreshold with the test-binary check as an
// argument, so that the refusal outside tests is testable in process.
func dealTestThreshold(inTest bool, random io.Reader, p, q *big.Int, parties, threshold int) (*ThresholdPublicKey, []*KeyShare, error) {
	if !inTest {
		return nil, nil, errTestKeyOutsideTest
	}
	return dealThreshold(random, p, q, parties, threshold, TestModulusBits)
}
