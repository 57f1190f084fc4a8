// Package policy is a consortium site's policy file: what the site's
// administrator allows to run on the site's data. A node (package
// consortium/node) asks Decide before it takes part in any task; a refusal
// names the rule that refused, so the analyst and the site's audit log see
// the same reason.
//
// A policy is JSON:
//
//	{
//	  "datasets": {
//	    "cohort": {"min_n": 200, "allowed_columns": ["age", "bmi", "y"],
//	               "budget": {"epsilon": 4, "delta": 1e-5}}
//	  },
//	  "analysts": {
//	    "alice": {"datasets": ["cohort"], "mechanisms": ["capefm"],
//	              "max_epsilon": 1, "max_delta": 1e-6,
//	              "budget": {"epsilon": 2, "delta": 1e-5}}
//	  }
//	}
//
// Rules, checked in this order (Rule names appear in refusals):
//
//	analyst        the analyst (certificate name) is listed
//	dataset        the dataset exists at the site and the analyst may use it
//	mechanism      the mechanism is in the analyst's list
//	min-n          the dataset has at least min_n rows
//	max-epsilon    the task's per-site ε ≤ max_epsilon (exact float compare)
//	max-delta      the task's per-site δ ≤ max_delta
//	columns        every column the task's schema reads is allowed
//	max-query-epsilon, max-query-delta
//	               (DPPP query tasks) the deployment's per-query ε, δ are
//	               at most max_query_epsilon, max_query_delta
//
// For a DPPP query task (mechanism "dppp", the dataset a deployment whose
// model the site holds) the task's ε and δ checked by max-epsilon and
// max-delta are its total at the site: k queries at the deployment's
// per-query (ε, δ), k·ε and k·δ (basic composition, as the ledgers charge
// them, rounded up); min-n and columns do not apply (the model reads its
// own input spec; its training rows are not the site's to count here).
//
// The budgets ("analyst-budget", "dataset-budget") are not decided here:
// they are ledgers kept by the node, charged before every release (package
// ledger decides exactly, with rationals); Decide only names their rules.
//
// Everything not allowed is refused: an analyst without max_epsilon or
// max_delta may run nothing (a missing limit is not "no limit").
package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/dplearn/dplearn/ledger"
)

// Budget rule names (charged by the node's ledgers, not by Decide).
const (
	RuleAnalystBudget = "analyst-budget"
	RuleDatasetBudget = "dataset-budget"
)

// Dataset is the policy of one of the site's datasets.
type Dataset struct {
	// MinN: the site refuses tasks on the dataset if it has fewer rows.
	MinN int64 `json:"min_n"`
	// AllowedColumns lists the columns a task's schema may read (target
	// and features); empty means none.
	AllowedColumns []string `json:"allowed_columns"`
	// Budget is the dataset's total budget over all analysts.
	Budget ledger.Budget `json:"budget"`
}

// Analyst is what one analyst (by certificate name) may do.
type Analyst struct {
	Datasets   []string      `json:"datasets"`
	Mechanisms []string      `json:"mechanisms"`
	MaxEpsilon float64       `json:"max_epsilon"`
	MaxDelta   float64       `json:"max_delta"`
	Budget     ledger.Budget `json:"budget"`
	// MaxQueryEpsilon and MaxQueryDelta bound a DPPP deployment's
	// per-query (ε, δ); required (ε > 0) if Mechanisms lists "dppp".
	MaxQueryEpsilon float64 `json:"max_query_epsilon,omitempty"`
	MaxQueryDelta   float64 `json:"max_query_delta,omitempty"`
}

// Policy is a site's policy file.
type Policy struct {
	Datasets map[string]Dataset `json:"datasets"`
	Analysts map[string]Analyst `json:"analysts"`
}

// Request is what a task asks of the site.
type Request struct {
	Analyst   string
	Dataset   string
	Mechanism string
	// Epsilon and Delta are the per-site (ε, δ) the site would be charged.
	Epsilon, Delta float64
	// N is the dataset's number of rows (public).
	N int64
	// Columns are the columns the task's schema reads.
	Columns []string
	// Queries > 0 marks a DPPP query task of that many queries at the
	// per-query (QueryEpsilon, QueryDelta); Epsilon and Delta are then
	// its total at the site.
	Queries                  int
	QueryEpsilon, QueryDelta float64
}

// Refusal is a request the policy refuses: Rule names the rule.
type Refusal struct {
	Rule   string
	Reason string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("refused by policy rule %q: %s", r.Rule, r.Reason)
}

// Load reads and validates a policy file.
func Load(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}

// Parse parses and validates a policy (unknown fields are refused: a
// misspelt limit must not silently become "no limit").
func Parse(b []byte) (*Policy, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("policy: parse: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks every limit and budget.
func (p *Policy) Validate() error {
	if len(p.Analysts) == 0 {
		return errors.New("policy: no analysts: the site would refuse every task")
	}
	for _, name := range sortedKeys(p.Datasets) {
		d := p.Datasets[name]
		if d.MinN < 0 {
			return fmt.Errorf("policy: dataset %q: min_n %d < 0", name, d.MinN)
		}
		if err := checkBudget(d.Budget); err != nil {
			return fmt.Errorf("policy: dataset %q: budget: %w", name, err)
		}
	}
	for _, name := range sortedKeys(p.Analysts) {
		a := p.Analysts[name]
		if !(a.MaxEpsilon > 0) || math.IsInf(a.MaxEpsilon, 0) || a.MaxDelta < 0 || !(a.MaxDelta < 1) {
			return fmt.Errorf("policy: analyst %q: need max_epsilon > 0 (finite) and max_delta in [0, 1), got %v, %v", name, a.MaxEpsilon, a.MaxDelta)
		}
		if err := checkBudget(a.Budget); err != nil {
			return fmt.Errorf("policy: analyst %q: budget: %w", name, err)
		}
		if slices.Contains(a.Mechanisms, "dppp") && (!(a.MaxQueryEpsilon > 0) || math.IsInf(a.MaxQueryEpsilon, 0) || a.MaxQueryDelta < 0 || !(a.MaxQueryDelta < 1)) {
			return fmt.Errorf("policy: analyst %q may run dppp: need max_query_epsilon > 0 (finite) and max_query_delta in [0, 1), got %v, %v", name, a.MaxQueryEpsilon, a.MaxQueryDelta)
		}
		for _, ds := range a.Datasets {
			if _, ok := p.Datasets[ds]; !ok {
				return fmt.Errorf("policy: analyst %q: dataset %q is not declared under datasets", name, ds)
			}
		}
	}
	return nil
}

func checkBudget(b ledger.Budget) error {
	if b.Rho != 0 || !(b.Epsilon > 0) || math.IsInf(b.Epsilon, 0) || b.Delta < 0 || !(b.Delta < 1) {
		return fmt.Errorf("need an (ε, δ) budget with ε > 0 finite and δ in [0, 1), got %v", b)
	}
	return nil
}

// Decide returns nil if the policy allows the request, else a *Refusal
// naming the first rule (in the documented order) that refuses it.
func (p *Policy) Decide(r Request) *Refusal {
	a, ok := p.Analysts[r.Analyst]
	if !ok {
		return &Refusal{"analyst", fmt.Sprintf("analyst %q is not listed in this site's policy", r.Analyst)}
	}
	d, ok := p.Datasets[r.Dataset]
	if !ok {
		return &Refusal{"dataset", fmt.Sprintf("this site has no dataset %q in its policy", r.Dataset)}
	}
	if !slices.Contains(a.Datasets, r.Dataset) {
		return &Refusal{"dataset", fmt.Sprintf("analyst %q may not use dataset %q (allowed: %v)", r.Analyst, r.Dataset, a.Datasets)}
	}
	if !slices.Contains(a.Mechanisms, r.Mechanism) {
		return &Refusal{"mechanism", fmt.Sprintf("analyst %q may not run mechanism %q (allowed: %v)", r.Analyst, r.Mechanism, a.Mechanisms)}
	}
	if r.Queries == 0 && r.N < d.MinN {
		return &Refusal{"min-n", fmt.Sprintf("dataset %q has %d rows, the policy requires at least %d", r.Dataset, r.N, d.MinN)}
	}
	if !(r.Epsilon <= a.MaxEpsilon) {
		return &Refusal{"max-epsilon", fmt.Sprintf("ε = %v per task exceeds analyst %q's maximum %v", r.Epsilon, r.Analyst, a.MaxEpsilon)}
	}
	if !(r.Delta <= a.MaxDelta) {
		return &Refusal{"max-delta", fmt.Sprintf("δ = %v per task exceeds analyst %q's maximum %v", r.Delta, r.Analyst, a.MaxDelta)}
	}
	if r.Queries > 0 {
		if !(r.QueryEpsilon <= a.MaxQueryEpsilon) {
			return &Refusal{"max-query-epsilon", fmt.Sprintf("the deployment's ε = %v per query exceeds analyst %q's maximum %v", r.QueryEpsilon, r.Analyst, a.MaxQueryEpsilon)}
		}
		if !(r.QueryDelta <= a.MaxQueryDelta) {
			return &Refusal{"max-query-delta", fmt.Sprintf("the deployment's δ = %v per query exceeds analyst %q's maximum %v", r.QueryDelta, r.Analyst, a.MaxQueryDelta)}
		}
		return nil
	}
	var bad []string
	for _, c := range r.Columns {
		if !slices.Contains(d.AllowedColumns, c) {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		return &Refusal{"columns", fmt.Sprintf("the task reads column(s) %v of dataset %q, not allowed (allowed: %v)", bad, r.Dataset, d.AllowedColumns)}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}
