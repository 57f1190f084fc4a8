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
// with six decimals, the common case, take the fast path.
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
