package classify

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestModelFileRoundTrip(t *testing.T) {
	spec, d := embedded(t, "digits")
	sub := d.Subset(func() []int {
		idx, _ := Partition(d.N(), 4, 1)
		return idx[0]
	}())
	sm, err := TrainSoftmax(ctx, sub, SoftmaxOptions{MaxIterations: 30})
	if err != nil {
		t.Fatal(err)
	}
	mlp, err := TrainMLP(ctx, sub, MLPOptions{Hidden: 16, Epochs: 5, Seed: 3, Activation: ActivationTanh})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, m := range []Model{sm, mlp} {
		f, err := NewModelFile(m, spec.ClassNames(), spec)
		if err != nil {
			t.Fatal(err)
		}
		f.Training = &TrainingInfo{Rows: sub.N(), Partition: "1/4", Options: map[string]any{"seed": 3}}
		path := filepath.Join(dir, f.Kind+".json")
		if err := f.Save(path); err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v", st.Mode())
		}
		g, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := g.Model()
		if err != nil {
			t.Fatal(err)
		}
		p1, p2 := make([]float64, 10), make([]float64, 10)
		for i := range d.N() {
			x := d.Row(i)
			m.PredictProba(x, p1)
			m2.PredictProba(x, p2)
			if m.Predict(x) != m2.Predict(x) || !slices.Equal(p1, p2) {
				t.Fatalf("%s: row %d predicts differently after a round trip", f.Kind, i)
			}
		}
		if g.Input == nil || g.Input.Features() != 64 || g.Training.Partition != "1/4" {
			t.Fatalf("%s: spec or training info lost", f.Kind)
		}
		// Saving again gives the same bytes.
		path2 := filepath.Join(dir, "again.json")
		if err := g.Save(path2); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(path)
		b, _ := os.ReadFile(path2)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: re-saved file differs", f.Kind)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
}

func TestModelFileStrict(t *testing.T) {
	good := `{"format":"dplearn-classifier","version":1,"model":"softmax","classes":["a","b"],"features":2,` +
		`"softmax":{"classes":2,"features":2,"weights":[1,2,3,4],"bias":[0,0]}}`
	if _, err := Decode([]byte(good)); err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"empty":           ``,
		"format":          strings.Replace(good, "dplearn-classifier", "other", 1),
		"version":         strings.Replace(good, `"version":1`, `"version":2`, 1),
		"unknown key":     strings.Replace(good, `"features":2,`, `"features":2,"extra":1,`, 1),
		"nested unknown":  strings.Replace(good, `"bias":[0,0]`, `"bias":[0,0],"x":1`, 1),
		"trailing":        good + ` {}`,
		"short weights":   strings.Replace(good, `[1,2,3,4]`, `[1,2,3]`, 1),
		"features":        strings.Replace(good, `"classes":["a","b"],"features":2`, `"classes":["a","b"],"features":3`, 1),
		"one class":       strings.Replace(good, `["a","b"]`, `["a"]`, 1),
		"duplicate class": strings.Replace(good, `["a","b"]`, `["a","a"]`, 1),
		"kind":            strings.Replace(good, `"model":"softmax"`, `"model":"mlp"`, 1),
		"two models":      strings.Replace(good, `"softmax":{`, `"external":{"command":["x"]},"softmax":{`, 1),
		"huge number":     strings.Replace(good, `[1,2,3,4]`, `[1,2,3,1e999]`, 1),
		"external no cmd": `{"format":"dplearn-classifier","version":1,"model":"external","classes":["a","b"],"features":2,"external":{"command":[]}}`,
		"bad timeout":     `{"format":"dplearn-classifier","version":1,"model":"external","classes":["a","b"],"features":2,"external":{"command":["x"],"request_timeout":"soon"}}`,
	}
	for name, s := range bad {
		if _, err := Decode([]byte(s)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("directory loaded as a model")
	}
}

// TestModelFilePrivacyReport: a student's privacy report survives a round
// trip, and a report that is not a finite non-negative guarantee of at
// least one label is refused on load.
func TestModelFilePrivacyReport(t *testing.T) {
	m := &Softmax{K: 2, D: 1, W: []float64{1, -1}, B: []float64{0, 0}}
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		r    PrivacyReport
		want string // "" for accepted
	}{
		{"valid", PrivacyReport{Epsilon: "2.413", Delta: "0.001", Labels: 80, Accountant: "basic composition"}, ""},
		{"NaN epsilon", PrivacyReport{Epsilon: "NaN", Delta: "0.001", Labels: 80}, "epsilon"},
		{"negative delta", PrivacyReport{Epsilon: "1", Delta: "-1e-5", Labels: 80}, "delta"},
		{"infinite epsilon", PrivacyReport{Epsilon: "+Inf", Delta: "0", Labels: 1}, "epsilon"},
		{"no labels", PrivacyReport{Epsilon: "1", Delta: "0", Labels: 0}, "0 labels"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := NewModelFile(m, []string{"a", "b"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := c.r
			f.Privacy = &r
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".json")
			err = f.Save(path)
			if err == nil {
				var g *ModelFile
				if g, err = Load(path); err == nil && (g.Privacy == nil || *g.Privacy != c.r) {
					t.Fatalf("round trip: %+v, want %+v", g.Privacy, c.r)
				}
			}
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}
