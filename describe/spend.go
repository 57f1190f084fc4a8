package describe

import (
	"fmt"

	"github.com/dplearn/dplearn/accounting"
)

// ColumnSpend is what one column of a Suggestion spent: the basic
// composition of its parts.
type ColumnSpend struct {
	Column  string
	Epsilon float64
	Delta   float64
	// Parts are the column's releases, in the order Suggest made them.
	Parts []SuggestPart
}

// PerColumn groups the suggestion's parts by column, in the order the
// columns first appear in Parts, and composes each column's parts.
//
// A column's releases are adaptively composed mechanisms on the same table
// (a bound's exponential mechanism uses the released median), so by basic
// composition (Dwork & Roth, Theorem 3.16; accounting.BasicComposition) the
// column is (Σ εᵢ, Σ δᵢ)-DP over its parts i. The columns' spends add up,
// by the same theorem, to the suggestion's (Epsilon, Delta). The sums are
// float64 additions in the parts' order (BasicComposition's), to be printed
// rounded up.
func (s *Suggestion) PerColumn() ([]ColumnSpend, error) {
	var out []ColumnSpend
	at := map[string]int{}
	for _, p := range s.Parts {
		i, ok := at[p.Column]
		if !ok {
			i = len(out)
			at[p.Column] = i
			out = append(out, ColumnSpend{Column: p.Column})
		}
		out[i].Parts = append(out[i].Parts, p)
	}
	for i := range out {
		parts := make([]accounting.EpsDelta, len(out[i].Parts))
		for j, p := range out[i].Parts {
			parts[j] = accounting.EpsDelta{Epsilon: p.Epsilon, Delta: p.Delta}
		}
		total, err := accounting.BasicComposition(parts...)
		if err != nil {
			return nil, fmt.Errorf("describe: column %q: %w", out[i].Column, err)
		}
		out[i].Epsilon, out[i].Delta = total.Epsilon, total.Delta
	}
	return out, nil
}
