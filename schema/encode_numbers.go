package schema

import (
	"math"
	"strconv"
)

// fromNumber is number for a value given as a float64.
func (c *column) fromNumber(v float64) (float64, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, c.fieldErr(strconv.AppendFloat(nil, v, 'g', -1, 64), ErrNotFinite)
	}
	tv, err := c.transform.apply(v)
	if err != nil {
		return 0, c.fieldErr(strconv.AppendFloat(nil, v, 'g', -1, 64), err)
	}
	return tv, nil
}
