package schema

import (
	"fmt"
	"math"
	"strconv"
)

// EncodeNumbers is Encode for a record from a columnar file: where isNum[i]
// is true, field i is the number nums[i] (fields[i] is ignored); elsewhere
// it is the text fields[i]. A number takes the same path as its exact text
// would (Encode parses text to the float64 this receives): the finiteness
// check, the transform, the clipping and the mapping, so the encoded row is
// bit-identical, with no text formatted or parsed. A categorical column or
// a labelled binary target given a number matches the number's shortest
// decimal text.
func (e *Encoder) EncodeNumbers(fields [][]byte, nums []float64, isNum []bool, dst []float64) error {
	if len(dst) != e.width {
		return fmt.Errorf("schema: encode: dst has length %d, want %d", len(dst), e.width)
	}
	if len(nums) != len(fields) || len(isNum) != len(fields) {
		return fmt.Errorf("schema: encode: %d fields, %d numbers, %d flags", len(fields), len(nums), len(isNum))
	}
	// Numbers where the schema wants text: format them, as a CSV holds them.
	var text [][]byte
	textOf := func(i int) []byte {
		if !isNum[i] {
			return fields[i]
		}
		if text == nil {
			text = make([][]byte, len(fields))
		}
		if text[i] == nil {
			text[i] = strconv.AppendFloat(nil, nums[i], 'g', -1, 64)
		}
		return text[i]
	}
	k := 0
	if e.intercept {
		dst[0] = e.scale
		k = 1
	}
	for i := range e.features {
		c := &e.features[i]
		if c.index >= len(fields) {
			return fmt.Errorf("record has %d fields, column %q is field %d", len(fields), c.name, c.index+1)
		}
		if c.cats != nil {
			raw := trimSpace(textOf(c.index))
			lvl, ok := c.cats[string(raw)]
			if !ok {
				if !c.unknownOK {
					return c.fieldErr(raw, ErrUnknownCategory)
				}
				lvl = 0
			}
			for j := 0; j < c.width; j++ {
				dst[k+j] = 0
			}
			if lvl > 0 {
				dst[k+lvl-1] = e.scale
			}
			k += c.width
			continue
		}
		var v float64
		var err error
		if isNum[c.index] {
			v, err = c.fromNumber(nums[c.index])
		} else {
			v, err = c.number(trimSpace(fields[c.index]))
		}
		if err != nil {
			return err
		}
		dst[k] = e.scale * affine(v, c.lo, c.hi)
		k++
	}
	y := 0.0
	if e.hasTarget {
		c := &e.target
		if c.index >= len(fields) {
			return fmt.Errorf("record has %d fields, target %q is field %d", len(fields), c.name, c.index+1)
		}
		var err error
		if isNum[c.index] && !e.schema.Target.Binary() {
			var v float64
			if v, err = c.fromNumber(nums[c.index]); err == nil {
				y = affine(v, c.lo, c.hi)
			}
		} else {
			y, err = e.encodeTarget(trimSpace(textOf(c.index)))
		}
		if err != nil {
			return err
		}
	}
	dst[k] = y
	return nil
}

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
