package report

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// DefaultDigits is the number of significant digits Up and Down print.
const DefaultDigits = 6

// Up formats x with at most DefaultDigits significant digits, rounded towards
// +∞: the printed decimal is never smaller than x (compared exactly, as
// rationals). Use it for every printed ε, δ, ρ, sensitivity or other figure
// whose overstatement is safe and whose understatement is not (PRIVACY-NOTES
// item 20): ε = 1.0000004 prints as 1.000001, never as 1.
func Up(x float64) string { return UpDigits(x, DefaultDigits) }

// Down formats x with at most DefaultDigits significant digits, rounded
// towards −∞: the printed decimal is never larger than x. Use it for figures
// whose understatement is the safe side (a noise scale that was added, a
// remaining budget).
func Down(x float64) string { return roundDirected(x, DefaultDigits, false) }

// UpDigits is Up with a chosen number of significant digits (1-17).
func UpDigits(x float64, digits int) string { return roundDirected(x, digits, true) }

func roundDirected(x float64, digits int, up bool) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "+Inf"
	case math.IsInf(x, -1):
		return "-Inf"
	case x == 0:
		return "0"
	}
	if digits < 1 {
		digits = 1
	}
	if digits > 17 {
		digits = 17
	}
	// Start from the nearest decimal and step one unit in the last place in
	// the safe direction until it lies on the safe side of x. "Safe side" is
	// judged on the float64 the decimal reads back as: a reader of the
	// printed text gets a number ≥ x (Up) or ≤ x (Down). (The decimal itself
	// may differ from that float64 by less than half an ulp, far below the
	// precision of any computed guarantee; this keeps δ = 1e-5 printing as
	// 1e-05.)
	s := strconv.FormatFloat(x, 'e', digits-1, 64)
	for i := 0; i < 4; i++ {
		d, err := strconv.ParseFloat(s, 64)
		if err != nil {
			break
		}
		if (up && d >= x) || (!up && d <= x) {
			return pretty(s)
		}
		s = stepLastDigit(s, up == (x > 0))
	}
	return pretty(s)
}

// stepLastDigit moves a decimal in 'e' format one unit in its last mantissa
// digit away from zero (away=true) or towards zero.
func stepLastDigit(s string, away bool) string {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	mant, expPart, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expPart)
	digits := strings.Replace(mant, ".", "", 1)
	n := new(big.Int)
	n.SetString(digits, 10)
	if away {
		n.Add(n, big.NewInt(1))
	} else {
		n.Sub(n, big.NewInt(1))
	}
	ds := n.String()
	switch {
	case len(ds) > len(digits): // 9.99 → 10.00: renormalise
		ds = ds[:len(digits)]
		exp++
	case len(ds) < len(digits) || ds == strings.Repeat("0", len(digits)): // 1.00 → 0.99
		ds = strings.Repeat("9", len(digits))
		exp--
	}
	out := ds[:1]
	if len(ds) > 1 {
		out += "." + ds[1:]
	}
	out += "e" + strconv.Itoa(exp)
	if neg {
		out = "-" + out
	}
	return out
}

// pretty renders a decimal in 'e' format the way the report always has: plain
// notation for magnitudes in [1e-3, 1e6), without trailing zeros.
func pretty(s string) string {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	mant, expPart, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expPart)
	if a := math.Abs(v); a >= 1e-3 && a < 1e6 {
		neg := strings.HasPrefix(mant, "-")
		digits := strings.Replace(strings.TrimPrefix(mant, "-"), ".", "", 1)
		var out string
		if exp >= 0 {
			if len(digits) <= exp+1 {
				out = digits + strings.Repeat("0", exp+1-len(digits))
			} else {
				out = digits[:exp+1] + "." + digits[exp+1:]
			}
		} else {
			out = "0." + strings.Repeat("0", -exp-1) + digits
		}
		if strings.Contains(out, ".") {
			out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
		}
		if neg {
			out = "-" + out
		}
		return out
	}
	if strings.Contains(mant, ".") {
		mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
	}
	sign := "+"
	if exp < 0 {
		sign = "-"
		exp = -exp
	}
	e := strconv.Itoa(exp)
	if len(e) < 2 {
		e = "0" + e
	}
	return mant + "e" + sign + e
}
