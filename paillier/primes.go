package paillier

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"runtime"
	"sync"
)

// primalityRounds is the number of Miller-Rabin rounds with random bases that
// big.Int.ProbablyPrime runs in addition to its Baillie-PSW test. With
// Baillie-PSW (no known counterexample) plus 20 random-base rounds the error
// probability for adversarially chosen input is below 4^-20 even if
// Baillie-PSW were broken; for the random candidates generated here it is far
// smaller.
const primalityRounds = 20

// sieveLimit bounds the small primes used to sieve safe-prime candidates.
const sieveLimit = 1 << 15

// smallPrimes holds the odd primes below sieveLimit. It is computed once by
// a pure function and never modified.
var smallPrimes = oddPrimesBelow(sieveLimit)

func oddPrimesBelow(limit int) []uint64 {
	composite := make([]bool, limit)
	var ps []uint64
	for i := 3; i < limit; i += 2 {
		if composite[i] {
			continue
		}
		ps = append(ps, uint64(i))
		for j := i * i; j < limit; j += 2 * i {
			composite[j] = true
		}
	}
	return ps
}

// SafePrimeProgress receives progress reports while safe primes are searched:
// worker is the index of the goroutine, tested the number of candidates q that
// passed the sieve and were tested so far by that worker.
type SafePrimeProgress func(worker int, tested uint64)

// GenerateSafePrime returns a random safe prime p = 2q+1 (q prime) of exactly
// bits bits whose two most significant bits are set, so that the product of
// two such primes has exactly 2*bits bits.
//
// Each worker draws a random odd starting point q and scans q, q+2, ...
// (up to 2^20 steps), sieving both q and 2q+1 by the odd primes below 2^15
// before any exponentiation, as OpenSSL does; the small bias of incremental
// search towards primes that follow long gaps is not known to help any
// attack on the resulting modulus.
//
// The search runs on workers goroutines (runtime.GOMAXPROCS if workers <= 0),
// each sieving its own random starting point; the first prime found wins and
// the others stop. Primality of q is established by ProbablyPrime
// (Baillie-PSW plus 20 random-base Miller-Rabin rounds); primality of p then
// follows from Pocklington's criterion (p-1 = 2q with q > sqrt(p), and
// 2^(p-1) = 1 mod p with gcd(2^2-1, p) = 1), which is a proof, and is
// confirmed once more with ProbablyPrime. ctx cancels the search.
func GenerateSafePrime(ctx context.Context, random io.Reader, bits, workers int, progress SafePrimeProgress) (*big.Int, error) {
	if bits < 32 {
		return nil, fmt.Errorf("paillier: safe prime of %d bits: need at least 32", bits)
	}
	if random == nil {
		return nil, errors.New("paillier: safe prime: nil random source")
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The random source is shared; serialise reads so that readers that are
	// not safe for concurrent use (e.g. a bufio wrapper) remain correct.
	lr := &lockedReader{r: random}
	var (
		once   sync.Once
		result *big.Int
		resErr error
		wg     sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			p, err := searchSafePrime(ctx, lr, bits, w, progress)
			if err != nil && ctx.Err() != nil && !errors.Is(err, errRandom) {
				return // another worker won, or the caller cancelled
			}
			once.Do(func() { result, resErr = p, err; cancel() })
		}(w)
	}
	wg.Wait()
	if result == nil && resErr == nil {
		return nil, fmt.Errorf("paillier: safe prime search: %w", context.Cause(ctx))
	}
	if resErr != nil {
		return nil, fmt.Errorf("paillier: safe prime search: %w", resErr)
	}
	return result, nil
}

var errRandom = errors.New("reading random source")

type lockedReader struct {
	mu sync.Mutex
	r  io.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}

// searchSafePrime runs one worker of the search.
func searchSafePrime(ctx context.Context, random io.Reader, bits, worker int, progress SafePrimeProgress) (*big.Int, error) {
	var tested uint64
	qBits := bits - 1
	buf := make([]byte, (qBits+7)/8)
	mods := make([]uint64, len(smallPrimes))
	two := big.NewInt(2)
	q, p, pm1, t := new(big.Int), new(big.Int), new(big.Int), new(big.Int)
	const maxDelta = 1 << 20
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(random, buf); err != nil {
			return nil, fmt.Errorf("%w: %w", errRandom, err)
		}
		// Keep exactly qBits bits with the top two set; make q odd.
		excess := uint(len(buf)*8 - qBits)
		buf[0] &= 0xff >> excess
		q.SetBytes(buf)
		q.SetBit(q, qBits-1, 1)
		q.SetBit(q, qBits-2, 1)
		q.SetBit(q, 0, 1)
		// q = 2 mod 3 is necessary for q > 3 and p = 2q+1 to be both prime
		// (q = 1 mod 3 gives 3 | p); the sieve takes care of it.
		for i, l := range smallPrimes {
			mods[i] = t.Mod(q, t.SetUint64(l)).Uint64()
		}
	nextDelta:
		for delta := uint64(0); delta < maxDelta; delta += 2 {
			for i, l := range smallPrimes {
				r := (mods[i] + delta) % l
				// q divisible by l, or p = 2q+1 divisible by l.
				// q > 2^30 > l, so neither q nor p can equal l itself.
				if r == 0 || (2*r+1)%l == 0 {
					continue nextDelta
				}
			}
			if delta%4096 == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			cand := new(big.Int).Add(q, t.SetUint64(delta))
			if cand.BitLen() != qBits {
				break
			}
			tested++
			if progress != nil && tested%64 == 0 {
				progress(worker, tested)
			}
			// Cheap Fermat filters base 2 on q and p first.
			qm1 := new(big.Int).Sub(cand, bigOne)
			if new(big.Int).Exp(two, qm1, cand).Cmp(bigOne) != 0 {
				continue
			}
			p.Lsh(cand, 1).Add(p, bigOne)
			pm1.Sub(p, bigOne)
			if t.Exp(two, pm1, p).Cmp(bigOne) != 0 {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if !cand.ProbablyPrime(primalityRounds) {
				continue
			}
			if !p.ProbablyPrime(primalityRounds) {
				continue
			}
			if progress != nil {
				progress(worker, tested)
			}
			return new(big.Int).Set(p), nil
		}
	}
}

// CheckSafePrime reports an error unless p is a safe prime: p and (p-1)/2
// both prime (ProbablyPrime with Baillie-PSW and 20 Miller-Rabin rounds).
func CheckSafePrime(p *big.Int) error {
	if p == nil || p.Sign() <= 0 || p.BitLen() < 3 {
		return errors.New("not a positive integer of at least 3 bits")
	}
	if p.Bit(0) == 0 {
		return errors.New("even")
	}
	if !p.ProbablyPrime(primalityRounds) {
		return errors.New("composite")
	}
	q := new(big.Int).Rsh(p, 1)
	if !q.ProbablyPrime(primalityRounds) {
		return errors.New("prime but not safe: (p-1)/2 is composite")
	}
	return nil
}

var (
	bigOne = big.NewInt(1)
	bigTwo = big.NewInt(2)
)
