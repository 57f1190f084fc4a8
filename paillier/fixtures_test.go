package paillier

import "math/big"

// Safe primes used as test fixtures so that tests do not spend minutes in
// safe-prime generation. They were produced once by GenerateSafePrime with
// crypto/rand and are test keys: never use them for real data.
// testPrimes[bits] = {p, q}, both safe, each of bits bits with the top two
// bits set, so n = p*q has exactly 2*bits bits.
var testPrimes = map[int][2]string{
	128: {
		"0xf1699c356c18f6769192202fc686e4d3",
		"0xff27be8304c5c6f494081c04c65750ab",
	},
	256: {
		"0xf1c0e34c05a4ae7298fefba465b866c32d8e5849cc828b1e2e3681d8fc7d0f5f",
		"0xc163b7c27602e824ba9ebda197e534e2e4c5f1132ec4defabc55e738b131f103",
	},
	512: {
		"0xf181cd71c69bf33798353a0b7ffd16221b37c1bf3ab6a25e4cbf680e67534458910601693bc5225ea832bf914dedd37746638d3b98bb78082af740024163c6f3",
		"0xc3daf36cb7f44d2939bb5d3e3602588c25bae86ac1949b8192ea96d2cc275497cd90437b60e781ed29c4f5b1b67d909c93cfaa2ebb40750d70b9f161a54f608f",
	},
	1024: {
		"0xe3a4aae01e2ff734ef318bdc8f40f98526da711688793a3f2d9f4988e7afb3c3502863a5b9b16b6dd4f51b8a553aa7bd509c6031fb61ab2dcc4c7466c06076110886fe57f629c82e21491391d87815966be4fe97ca58db32553f2384ca32ba51ed844da530ee036df41284931e3fc9341988bbdf70de94dfdae8ef9c82ba35b3",
		"0xc59890cfc73068c61fe612d8564643e3fd517f56b7a5c5ddeb71412f79c745d03374275b7f8cc49d1fabb4ef9ea90a91c967848e763f49160ae590cb1d0b79044f21c85a3daf9c6aa1d7f8c55cb3bbdd08458fafeb0170b016fb5fe0eb713d25c816afcb63af74b88e34a4a6058311e2553ba70b37aabe0f2fe46e2d7096a5ab",
	},
	1536: {
		"0xc8fa51a280a42a7a5bee690a141263326b50712477c69d15b0d307c298e7f4391f3739f3c1dea456279b481065ebb5d5434675d990fe61f37cd28bb1de66534605ba9c8abcfbe5fa79e8777cf1ebbfa0ff7d6046913247f3951e36e8ae17a5319daf1d2c8171dc8c1d8c8bb56916f7b87aa08d371eb72912cfafb19dcb8ecf8fbce49e3652315c13b492de5bc1c5e831909a3b63502104bf2c477c3b433e5bdf2bc3b677ff2c973ba457e6082dfcc641405b7f3f21cb6a8c24cdf75549d5f8f7",
		"0xcd4674f6f3e894cc209ad968c718f80ecfaa20ca976eb15b764785ab953ec7fd723f2c26891a06a471ffebc16f42c821fdb2db77c52e71e9f424daa92f1a187622f71370f1dbfcc8a4223dd83ff826a65704ff47618171023c1c4f3897b53c3a7bb3b91c5fec2da9b3ba144722272f782d35d7649cbc00ef851ca4996f8f9f1f50887e5da407d5889ec69e337d4c58fd7f6280dc38901a8f89e3cf1b76cc07ef1464189637c7852841cdb329eec990d3fa94def4a5bc938f86877ed0ec465e5f",
	},
}

// testPrimePair returns the fixture safe primes for a modulus of modBits bits.
func testPrimePair(modBits int) (p, q *big.Int) {
	pair, ok := testPrimes[modBits/2]
	if !ok {
		panic("no test primes for this size")
	}
	p, _ = new(big.Int).SetString(pair[0], 0)
	q, _ = new(big.Int).SetString(pair[1], 0)
	return p, q
}
