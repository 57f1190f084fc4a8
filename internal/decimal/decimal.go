// Package decimal parses decimal floating-point numbers from bytes, fast.
//
// Parse returns exactly what strconv.ParseFloat(string(b), 64) returns (the
// same float64 bits and an error in the same cases, wrapping the same
// strconv errors) without allocating. Numbers of the form
// [+-]digits[.digits][(e|E)[+-]digits] with at most 19 significant digits
// whose exact value is m·10^e with m ≤ 2^53 and |e| ≤ 22 are converted with
// one correctly rounded IEEE multiplication or division (Clinger's fast
// path), which is exact; everything else (long mantissas, large exponents,
// hex, inf, nan, syntax errors) is handed to strconv.ParseFloat. CSV values
// with six decimals, the common case, take the fast path. Prefix parses a
// plain decimal at the start of a buffer, for a CSV reader that splits and
// parses fields in one scan.
package decimal

import (
	"math"
	"strconv"
	"unsafe"
)

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// Parse parses b as a float64, like strconv.ParseFloat(string(b), 64).
func Parse(b []byte) (float64, error) {
	if v, ok := fast(b); ok {
		return v, nil
	}
	if len(b) == 0 {
		return strconv.ParseFloat("", 64)
	}
	// strconv does not retain the string, so no copy is needed.
	return strconv.ParseFloat(unsafe.String(&b[0], len(b)), 64)
}

func fast(b []byte) (float64, bool) {
	i := 0
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	var m uint64
	nd := 0     // significant digits accumulated in m
	digits := 0 // digits seen (mantissa)
	exp := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		digits++
		if m == 0 && b[i] == '0' {
			continue // leading zeros are not significant
		}
		if nd >= 19 {
			return 0, false
		}
		m = m*10 + uint64(b[i]-'0')
		nd++
	}
	if i < len(b) && b[i] == '.' {
		i++
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			digits++
			exp--
			if m == 0 && b[i] == '0' {
				continue
			}
			if nd >= 19 {
				return 0, false
			}
			m = m*10 + uint64(b[i]-'0')
			nd++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		if i == len(b) {
			return 0, false
		}
		e := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if e > 10000 {
				return 0, false
			}
			e = e*10 + int(b[i]-'0')
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if i != len(b) || m > 1<<53 {
		return 0, false
	}
	var f float64
	switch {
	case m == 0:
		f = 0
	case exp == 0:
		f = float64(m)
	case exp > 0 && exp <= 22:
		f = float64(m) * pow10[exp]
	case exp < 0 && exp >= -22:
		f = float64(m) / pow10[-exp]
	default:
		return 0, false
	}
	if neg {
		f = -f
	}
	return f, true
}

// Prefix parses the longest prefix of b of the form [+-]digits[.digits]
// (at least one digit, no exponent) and returns its value and its length
// n: exactly strconv.ParseFloat(string(b[:n]), 64). ok is false when b
// does not start with such a prefix or when the prefix is beyond the fast
// path (more than 19 digits, leading zeros included, a mantissa above 2⁵³,
// more than 22 decimals); the caller then parses the whole field with
// Parse. A reader that splits fields itself parses as it splits: a field
// is the number when b[n] is the delimiter (or n == len(b)), otherwise it
// is text.
//
// The value is m·10^−e with m ≤ 2⁵³ and e ≤ 22, converted with one
// correctly rounded IEEE division (exact when e = 0): the correctly
// rounded value of the text, which is what strconv returns. The sign is
// applied without a branch (a column of random signs would mispredict
// one in two).
func Prefix(b []byte) (v float64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	c := b[0]
	neg := b2u(c == '-')
	i := int(neg | b2u(c == '+'))
	i0 := i
	var m uint64
	// At most 19 digits are accepted below, so m cannot wrap before
	// the check; a longer run wraps harmlessly and is refused.
	for i < len(b) {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		m = m*10 + uint64(d)
		i++
	}
	nd, exp := i-i0, 0
	if i < len(b) && b[i] == '.' {
		i++
		f0 := i
		for i < len(b) {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			m = m*10 + uint64(d)
			i++
		}
		exp = i - f0
		nd += exp
	}
	if nd == 0 || nd > 19 || exp > 22 || m > 1<<53 {
		return 0, 0, false
	}
	v = float64(m) / pow10[exp]
	return math.Float64frombits(math.Float64bits(v) | neg<<63), i, true
}

// b2u is 1 for true, 0 for false (compiled without a branch).
func b2u(b bool) uint64 {
	var x uint64
	if b {
		x = 1
	}
	return x
}
