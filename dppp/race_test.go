//go:build race

package dppp

// raceEnabled: the race detector slows the 2048-bit and proof arithmetic
// about tenfold; see skipCryptoUnderRace.
const raceEnabled = true
