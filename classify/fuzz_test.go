package classify

import "testing"

// FuzzDecode checks that no model file or spec panics the decoders, and
// that an accepted model predicts on a zero row without panicking.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"format":"dplearn-classifier","version":1,"model":"softmax","classes":["a","b"],"features":2,` +
		`"softmax":{"classes":2,"features":2,"weights":[1,2,3,4],"bias":[0,0]}}`))
	f.Add([]byte(`{"format":"dplearn-classifier","version":1,"model":"mlp","classes":["a","b"],"features":1,` +
		`"mlp":{"features":1,"hidden":1,"classes":2,"activation":"tanh","w1":[1],"b1":[0],"w2":[1,-1],"b2":[0,0]}}`))
	f.Add([]byte(`{"format":"dplearn-classifier","version":1,"model":"softmax","classes":["a","b"],"features":1,` +
		`"spec":{"target":{"name":"y","classes":["a","b"]},"features":[{"name":"w","range":[0,1]}]},` +
		`"softmax":{"classes":2,"features":1,"weights":[1,2],"bias":[0,0]}}`))
	f.Add([]byte(`{"target":{"name":"y","positive":"yes"},"features":[{"name":"c","categories":["u","v"]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if mf, err := Decode(b); err == nil {
			if m, err := mf.Model(); err == nil {
				m.Predict(make([]float64, m.Features()))
			}
		}
		if s, err := ParseSpec(b); err == nil {
			if s.Features() < 0 || s.Classes() < 2 {
				t.Fatalf("spec with %d features, %d classes", s.Features(), s.Classes())
			}
			if _, err := s.MarshalJSON(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
