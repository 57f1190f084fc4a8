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
// path (a mantissa above 2⁵³ or of more than 19 digits, more than 22
// decimals); the caller then parses the whole field with Parse. A reader
// that splits fields itself parses as it splits: a field is the number
// when b[n] is the delimiter (or n == len(b)), otherwise it is text.
//
// The value is m·10^−e with m ≤ 2⁵³ and e ≤ 22, converted with one
// correctly rounded IEEE division (or none): the correctly rounded value
// of the text, which is what strconv returns.
func Prefix(b []byte) (v float64, n int, ok bool) {
	i := 0
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	m, i0 := uint64(0), i
	m, i, ok = digits(b, i, m)
	if !ok {
		return 0, 0, false
	}
	nd := i - i0
	exp := 0
	if i < len(b) && b[i] == '.' {
		i++
		f0 := i
		if m, i, ok = digits(b, i, m); !ok {
			return 0, 0, false
		}
		exp = i - f0
		nd += exp
	}
	if nd == 0 || m > 1<<53 {
		return 0, 0, false
	}
	switch {
	case m == 0:
		v = 0
	case exp == 0:
		v = float64(m)
	case exp <= 22:
		v = float64(m) / pow10[exp]
	default:
		return 0, 0, false
	}
	if neg {
		v = -v
	}
	return v, i, true
}

// digits accumulates the run of decimal digits at b[i:] into m (m·10^len
// + run) and returns the new m and the index after the run; false when m
// would exceed 10¹⁹ (the caller falls back to strconv).
func digits(b []byte, i int, m uint64) (uint64, int, bool) {
	for ; i < len(b); i++ {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		if m >= 1e18 {
			return 0, 0, false
		}
		m = m*10 + uint64(d)
	}
	return m, i, true
}

var pow10u = [...]uint64{1, 10, 100, 1000, 1e4, 1e5, 1e6, 1e7, 1e8}
