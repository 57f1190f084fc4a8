package wire

import (
	"errors"
	"math"
	"testing"
)

var errBad = errors.New("test: malformed")

// TestRoundTrip writes every field kind and reads it back.
func TestRoundTrip(t *testing.T) {
	var w Writer
	w.U8(7)
	w.U16(300)
	w.U32(70000)
	w.U64(1 << 40)
	w.F64(-2.5)
	w.Bytes8([]byte("abc"))
	w.Str16("site-1")
	w.Blob([]byte{1, 2, 3, 4})
	var k [32]byte
	k[31] = 9
	w.Raw(k[:])
	r := NewReader(w.Bytes(), errBad)
	if r.U8("a") != 7 || r.U16("b") != 300 || r.U32("c") != 70000 || r.U64("d") != 1<<40 || r.Finite("e") != -2.5 ||
		string(r.Bytes8("f")) != "abc" || r.Str16("g", 10) != "site-1" || len(r.Blob("h", 4)) != 4 || r.Fixed32("i") != k {
		t.Fatalf("round trip differs (err %v)", r.Err())
	}
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
}

// TestRefusals: each malformed input gives an error wrapping the caller's
// sentinel, and the first error sticks.
func TestRefusals(t *testing.T) {
	nan := func() []byte { var w Writer; w.F64(math.NaN()); return w.Bytes() }
	long := func() []byte { var w Writer; w.Str16("toolong"); return w.Bytes() }
	count := func() []byte { var w Writer; w.U32(1000); w.U8(1); return w.Bytes() }
	blob := func() []byte { var w Writer; w.Blob(make([]byte, 9)); return w.Bytes() }
	cases := []struct {
		name string
		in   []byte
		read func(*Reader)
	}{
		{"short", []byte{1}, func(r *Reader) { r.U32("x") }},
		{"trailing", []byte{1, 2}, func(r *Reader) { r.U8("x") }},
		{"not finite", nan(), func(r *Reader) { r.Finite("x") }},
		{"string over limit", long(), func(r *Reader) { r.Str16("x", 3) }},
		{"count over limit", count(), func(r *Reader) { r.Count("x", 10, 1) }},
		{"count over bytes left", count(), func(r *Reader) { r.Count("x", 5000, 1) }},
		{"blob over limit", blob(), func(r *Reader) { r.Blob("x", 8) }},
	}
	for _, c := range cases {
		r := NewReader(c.in, errBad)
		c.read(r)
		if err := r.Done(); !errors.Is(err, errBad) {
			t.Errorf("%s: error %v, want one wrapping %v", c.name, err, errBad)
		}
	}
	r := NewReader(nil, errBad)
	r.U8("first")
	r.Fail("second")
	if err := r.Err(); err == nil || !contains(err.Error(), "first") {
		t.Errorf("first error did not stick: %v", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
