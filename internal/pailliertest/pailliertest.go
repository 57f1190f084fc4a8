// Package pailliertest provides fixed Paillier and threshold Paillier keys
// for tests of dplearn's packages built on paillier (as net/http/httptest
// does for servers), so that their tests need not spend seconds generating
// safe primes.
//
// The primes below are published in this source file: anyone can decrypt
// anything encrypted under these keys. Never use them outside tests. The
// package is internal so that no other module can import them, and
// `dplearn dppp keygen --primes` refuses them (IsPublished).
package pailliertest

import (
	"crypto/rand"
	"fmt"
	"math/big"

	"github.com/dplearn/dplearn/paillier"
)

// Safe primes (p = 2p'+1, q = 2q'+1) of 512, 1024 and 1536 bits, generated
// once with paillier.GenerateSafePrime (the fixtures of package paillier's
// own tests), keyed by modulus size. PUBLIC: test use only.
var primes = map[int][2]string{
	// 1024-bit moduli are below paillier.MinModulusBits: only ThresholdKey
	// deals them (paillier.DealTestThreshold, which refuses outside `go test`
	// binaries), and no decoder accepts them.
	1024: {
		"0xf181cd71c69bf33798353a0b7ffd16221b37c1bf3ab6a25e4cbf680e67534458910601693bc5225ea832bf914dedd37746638d3b98bb78082af740024163c6f3",
		"0xc3daf36cb7f44d2939bb5d3e3602588c25bae86ac1949b8192ea96d2cc275497cd90437b60e781ed29c4f5b1b67d909c93cfaa2ebb40750d70b9f161a54f608f",
	},
	2048: {
		"0xe3a4aae01e2ff734ef318bdc8f40f98526da711688793a3f2d9f4988e7afb3c3502863a5b9b16b6dd4f51b8a553aa7bd509c6031fb61ab2dcc4c7466c06076110886fe57f629c82e21491391d87815966be4fe97ca58db32553f2384ca32ba51ed844da530ee036df41284931e3fc9341988bbdf70de94dfdae8ef9c82ba35b3",
		"0xc59890cfc73068c61fe612d8564643e3fd517f56b7a5c5ddeb71412f79c745d03374275b7f8cc49d1fabb4ef9ea90a91c967848e763f49160ae590cb1d0b79044f21c85a3daf9c6aa1d7f8c55cb3bbdd08458fafeb0170b016fb5fe0eb713d25c816afcb63af74b88e34a4a6058311e2553ba70b37aabe0f2fe46e2d7096a5ab",
	},
	3072: {
		"0xc8fa51a280a42a7a5bee690a141263326b50712477c69d15b0d307c298e7f4391f3739f3c1dea456279b481065ebb5d5434675d990fe61f37cd28bb1de66534605ba9c8abcfbe5fa79e8777cf1ebbfa0ff7d6046913247f3951e36e8ae17a5319daf1d2c8171dc8c1d8c8bb56916f7b87aa08d371eb72912cfafb19dcb8ecf8fbce49e3652315c13b492de5bc1c5e831909a3b63502104bf2c477c3b433e5bdf2bc3b677ff2c973ba457e6082dfcc641405b7f3f21cb6a8c24cdf75549d5f8f7",
		"0xcd4674f6f3e894cc209ad968c718f80ecfaa20ca976eb15b764785ab953ec7fd723f2c26891a06a471ffebc16f42c821fdb2db77c52e71e9f424daa92f1a187622f71370f1dbfcc8a4223dd83ff826a65704ff47618171023c1c4f3897b53c3a7bb3b91c5fec2da9b3ba144722272f782d35d7649cbc00ef851ca4996f8f9f1f50887e5da407d5889ec69e337d4c58fd7f6280dc38901a8f89e3cf1b76cc07ef1464189637c7852841cdb329eec990d3fa94def4a5bc938f86877ed0ec465e5f",
	},
}

// Primes returns the public test safe primes for a modulus of bits bits
// (1024, 2048 or 3072).
func Primes(bits int) (p, q *big.Int, err error) {
	pair, ok := primes[bits]
	if !ok {
		return nil, nil, fmt.Errorf("pailliertest: no test primes for %d-bit keys (have 1024, 2048 and 3072)", bits)
	}
	p, _ = new(big.Int).SetString(pair[0], 0)
	q, _ = new(big.Int).SetString(pair[1], 0)
	return p, q, nil
}

// PrivateKey returns a Paillier key with a public factorisation (2048 or
// 3072 bits: paillier.NewPrivateKey refuses 1024).
func PrivateKey(bits int) (*paillier.PrivateKey, error) {
	p, q, err := Primes(bits)
	if err != nil {
		return nil, err
	}
	return paillier.NewPrivateKey(p, q)
}

// ThresholdKey deals a fresh (parties, threshold) threshold key on the public
// test primes (about half a second at 2048 bits). The shares are fresh each
// call; the modulus is always the same. At 1024 bits (through
// paillier.DealTestThreshold, only in test binaries) the exponentiations of
// a protocol test cost about a sixth of those at 2048; such keys cannot be
// written to key files or sent to another process (every decoder refuses
// them), so tests of the CLI and of key files use 2048.
func ThresholdKey(bits, parties, threshold int) (*paillier.ThresholdPublicKey, []*paillier.KeyShare, error) {
	p, q, err := Primes(bits)
	if err != nil {
		return nil, nil, err
	}
	if bits < paillier.MinModulusBits {
		return paillier.DealTestThreshold(rand.Reader, p, q, parties, threshold)
	}
	return paillier.DealThreshold(rand.Reader, p, q, parties, threshold)
}

// IsPublished reports whether x is one of the published test primes of this
// package (which are also the 512-, 1024- and 1536-bit fixtures of package
// paillier's own tests). A key built on any of them can be decrypted by
// anyone who reads dplearn's source.
func IsPublished(x *big.Int) bool {
	if x == nil {
		return false
	}
	for _, pair := range primes {
		for _, s := range pair {
			if p, _ := new(big.Int).SetString(s, 0); p.Cmp(x) == 0 {
				return true
			}
		}
	}
	return false
}
