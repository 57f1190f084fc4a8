package paillier

import (
	"errors"
	"fmt"
	"math/big"
)

// Packing packs a vector of bounded signed integers (one party's vote
// histogram, say) into one plaintext, so that a vector costs one ciphertext
// instead of one per coordinate, and so that the homomorphic sum of up to
// MaxParties packed vectors decodes to the coordinate-wise sum exactly.
//
// Layout: each value x in [Min, Max] is stored as the offset x - Min in
// [0, Max-Min], in a slot of w bits, slot j at bit position j*w (slot 0 in
// the least significant bits). w is the bit length of MaxParties*(Max-Min),
// so the sum of MaxParties offsets never carries into the next slot, and
// Slots*w <= bitlen(n) - 1, so the packed sum is below n and never wraps.
// Decode subtracts parties*Min per slot.
//
// Overflow is never silent: Encode rejects values outside [Min, Max], Decode
// rejects a parties count above MaxParties, a plaintext with bits above the
// last slot, and a slot whose value exceeds parties*(Max-Min) (what a party
// that encrypted an out-of-range value would cause, if its excess is large
// enough to show; encryption does not prove ranges, see the package doc).
type Packing struct {
	slots      int
	min, max   int64
	maxParties int
	slotBits   int
	width      *big.Int // Max - Min
}

// NewPacking returns the packing of slots values in [min, max] for sums of up
// to maxParties vectors under pk. It fails if the layout does not fit in one
// plaintext; MaxSlots tells how many slots would.
func NewPacking(pk *PublicKey, slots int, min, max int64, maxParties int) (*Packing, error) {
	if pk == nil {
		return nil, errors.New("paillier: packing: nil public key")
	}
	if slots < 1 {
		return nil, fmt.Errorf("paillier: packing: %d slots, need at least 1", slots)
	}
	if min > max {
		return nil, fmt.Errorf("paillier: packing: min %d > max %d", min, max)
	}
	if maxParties < 1 {
		return nil, fmt.Errorf("paillier: packing: %d parties, need at least 1", maxParties)
	}
	w := slotBits(min, max, maxParties)
	if avail := pk.n.BitLen() - 1; slots*w > avail {
		return nil, fmt.Errorf("paillier: packing: %d slots of %d bits (values in [%d, %d], %d parties) need %d bits, the %d-bit key holds %d (at most %d slots)",
			slots, w, min, max, maxParties, slots*w, pk.n.BitLen(), avail, avail/w)
	}
	width := new(big.Int).Sub(big.NewInt(max), big.NewInt(min))
	return &Packing{slots: slots, min: min, max: max, maxParties: maxParties, slotBits: w, width: width}, nil
}

// slotBits is the bit length of maxParties*(max-min), at least 1.
func slotBits(min, max int64, maxParties int) int {
	w := new(big.Int).Sub(big.NewInt(max), big.NewInt(min))
	w.Mul(w, big.NewInt(int64(maxParties)))
	if w.BitLen() == 0 {
		return 1
	}
	return w.BitLen()
}

// MaxSlots returns how many values in [min, max] fit in one plaintext of pk
// when up to maxParties vectors are summed.
func MaxSlots(pk *PublicKey, min, max int64, maxParties int) int {
	if pk == nil || min > max || maxParties < 1 {
		return 0
	}
	return (pk.n.BitLen() - 1) / slotBits(min, max, maxParties)
}

// Slots returns the number of values per plaintext.
func (pp *Packing) Slots() int { return pp.slots }

// SlotBits returns the width of one slot in bits.
func (pp *Packing) SlotBits() int { return pp.slotBits }

// MaxParties returns the largest number of summed vectors Decode accepts.
func (pp *Packing) MaxParties() int { return pp.maxParties }

// Encode packs one party's values (exactly Slots of them, each in
// [Min, Max]) into a plaintext.
func (pp *Packing) Encode(values []int64) (*big.Int, error) {
	if len(values) != pp.slots {
		return nil, fmt.Errorf("paillier: pack: %d values, want %d", len(values), pp.slots)
	}
	m := new(big.Int)
	off := new(big.Int)
	minB := big.NewInt(pp.min)
	for j := pp.slots - 1; j >= 0; j-- {
		v := values[j]
		if v < pp.min || v > pp.max {
			return nil, fmt.Errorf("paillier: pack: value %d in slot %d outside [%d, %d]", v, j, pp.min, pp.max)
		}
		off.SetInt64(v)
		off.Sub(off, minB)
		m.Lsh(m, uint(pp.slotBits))
		m.Or(m, off)
	}
	return m, nil
}

// Decode unpacks the plaintext of the homomorphic sum of parties packed
// vectors into the coordinate-wise sums.
func (pp *Packing) Decode(m *big.Int, parties int) ([]int64, error) {
	if m == nil || m.Sign() < 0 {
		return nil, errors.New("paillier: unpack: nil or negative plaintext")
	}
	if parties < 1 || parties > pp.maxParties {
		return nil, fmt.Errorf("paillier: unpack: sum of %d vectors, the packing holds 1 to %d", parties, pp.maxParties)
	}
	total := pp.slots * pp.slotBits
	if m.BitLen() > total {
		return nil, fmt.Errorf("paillier: unpack: overflow: plaintext has %d bits, the %d slots hold %d", m.BitLen(), pp.slots, total)
	}
	limit := new(big.Int).Mul(pp.width, big.NewInt(int64(parties)))
	base := new(big.Int).Mul(big.NewInt(pp.min), big.NewInt(int64(parties)))
	mask := new(big.Int).Sub(new(big.Int).Lsh(bigOne, uint(pp.slotBits)), bigOne)
	out := make([]int64, pp.slots)
	rest := new(big.Int).Set(m)
	v := new(big.Int)
	for j := 0; j < pp.slots; j++ {
		v.And(rest, mask)
		rest.Rsh(rest, uint(pp.slotBits))
		if v.Cmp(limit) > 0 {
			return nil, fmt.Errorf("paillier: unpack: overflow in slot %d: %v exceeds %d parties x (max - min) = %v", j, v, parties, limit)
		}
		v.Add(v, base)
		if !v.IsInt64() {
			return nil, fmt.Errorf("paillier: unpack: slot %d sum %v does not fit in int64", j, v)
		}
		out[j] = v.Int64()
	}
	return out, nil
}
