package policy

import (
	"math"
	"strings"
	"testing"
)

const sample = `{
  "datasets": {"cohort": {"min_n": 200, "allowed_columns": ["age", "bmi", "y"], "budget": {"epsilon": 4, "delta": 1e-5}},
               "small":  {"min_n": 10, "allowed_columns": ["y"], "budget": {"epsilon": 1, "delta": 1e-6}}},
  "analysts": {"alice": {"datasets": ["cohort"], "mechanisms": ["capefm"], "max_epsilon": 1, "max_delta": 1e-6, "budget": {"epsilon": 2, "delta": 1e-5}}}
}`

func TestDecide(t *testing.T) {
	p, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	ok := Request{Analyst: "alice", Dataset: "cohort", Mechanism: "capefm", Epsilon: 1, Delta: 1e-6, N: 200, Columns: []string{"y", "age"}}
	cases := []struct {
		name string
		mod  func(*Request)
		rule string
	}{
		{"allowed", func(*Request) {}, ""},
		{"unknown analyst", func(r *Request) { r.Analyst = "mallory" }, "analyst"},
		{"unknown dataset", func(r *Request) { r.Dataset = "nope" }, "dataset"},
		{"dataset not granted", func(r *Request) { r.Dataset = "small" }, "dataset"},
		{"mechanism", func(r *Request) { r.Mechanism = "gaussian-fm-local" }, "mechanism"},
		{"min n", func(r *Request) { r.N = 199 }, "min-n"},
		{"max epsilon by one ulp", func(r *Request) { r.Epsilon = math.Nextafter(1, 2) }, "max-epsilon"},
		{"max epsilon NaN", func(r *Request) { r.Epsilon = math.NaN() }, "max-epsilon"},
		{"max delta", func(r *Request) { r.Delta = 2e-6 }, "max-delta"},
		{"column", func(r *Request) { r.Columns = []string{"y", "zip"} }, "columns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ok
			c.mod(&r)
			got := p.Decide(r)
			switch {
			case c.rule == "" && got != nil:
				t.Fatalf("refused: %v", got)
			case c.rule != "" && (got == nil || got.Rule != c.rule):
				t.Fatalf("want rule %q, got %v", c.rule, got)
			case got != nil && !strings.Contains(got.Error(), c.rule):
				t.Fatalf("refusal does not name its rule: %v", got)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	cases := map[string]string{
		"unknown field":   `{"datasets":{}, "analysts":{"a":{"max_epsilon":1,"max_delta":0,"budget":{"epsilon":1}, "max_epsilom": 5}}}`,
		"no max epsilon":  `{"datasets":{}, "analysts":{"a":{"max_delta":0,"budget":{"epsilon":1}}}}`,
		"no budget":       `{"datasets":{}, "analysts":{"a":{"max_epsilon":1,"max_delta":0}}}`,
		"undeclared data": `{"datasets":{}, "analysts":{"a":{"datasets":["x"],"max_epsilon":1,"max_delta":0,"budget":{"epsilon":1}}}}`,
		"no analysts":     `{"datasets":{}}`,
		"negative min_n":  `{"datasets":{"x":{"min_n":-1,"budget":{"epsilon":1}}}, "analysts":{"a":{"max_epsilon":1,"max_delta":0,"budget":{"epsilon":1}}}}`,
		"rho dataset":     `{"datasets":{"x":{"budget":{"rho":1}}}, "analysts":{"a":{"max_epsilon":1,"max_delta":0,"budget":{"epsilon":1}}}}`,
	}
	for name, js := range cases {
		if _, err := Parse([]byte(js)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestDecideDPPP: a DPPP query task is checked on its total (k queries at
// the per-query (ε, δ)) against max_epsilon/max_delta and on the
// per-query (ε, δ) against max_query_epsilon/max_query_delta, exactly;
// min-n and columns do not apply to a model.
func TestDecideDPPP(t *testing.T) {
	p, err := Parse([]byte(`{
  "datasets": {"signs": {"min_n": 50, "budget": {"epsilon": 40, "delta": 1e-3}}},
  "analysts": {"alice": {"datasets": ["signs"], "mechanisms": ["dppp"], "max_epsilon": 10, "max_delta": 1e-4,
                         "max_query_epsilon": 2, "max_query_delta": 1e-5, "budget": {"epsilon": 20, "delta": 1e-2}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ok := Request{Analyst: "alice", Dataset: "signs", Mechanism: "dppp", Epsilon: 10, Delta: 5e-5, Queries: 5, QueryEpsilon: 2, QueryDelta: 1e-5}
	cases := []struct {
		name string
		mod  func(*Request)
		rule string
	}{
		{"allowed at every limit", func(*Request) {}, ""},
		{"per-query ε by one ulp", func(r *Request) { r.QueryEpsilon = math.Nextafter(2, 3) }, "max-query-epsilon"},
		{"per-query ε NaN", func(r *Request) { r.QueryEpsilon = math.NaN() }, "max-query-epsilon"},
		{"per-query δ", func(r *Request) { r.QueryDelta = 2e-5 }, "max-query-delta"},
		{"task total ε", func(r *Request) { r.Epsilon = math.Nextafter(10, 11) }, "max-epsilon"},
		{"task total δ", func(r *Request) { r.Delta = 2e-4 }, "max-delta"},
		{"mechanism capefm not granted", func(r *Request) { r.Mechanism = "capefm"; r.Queries = 0 }, "mechanism"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ok
			c.mod(&r)
			got := p.Decide(r)
			if (c.rule == "") != (got == nil) || (got != nil && got.Rule != c.rule) {
				t.Fatalf("want rule %q, got %v", c.rule, got)
			}
		})
	}
	// An analyst who may run dppp needs per-query limits.
	if _, err := Parse([]byte(`{"datasets":{"x":{"budget":{"epsilon":1}}}, "analysts":{"a":{"datasets":["x"],"mechanisms":["dppp"],"max_epsilon":1,"max_delta":0,"budget":{"epsilon":1}}}}`)); err == nil {
		t.Fatal("a dppp analyst without max_query_epsilon was accepted")
	}
}
