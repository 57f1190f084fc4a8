package schema

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Difference names the first place where two schemas differ: the column
// (a feature's name, the target's, or "" for a schema-level field such as
// the intercept or the number of features) and the declaration field, with
// both values as declared (JSON).
type Difference struct {
	Column string
	Field  string
	A, B   string
}

// String says what differs in words, e.g. `column "age": field "range" is
// [18,90] in one schema and [18,95] in the other`.
func (d *Difference) String() string {
	if d == nil {
		return "the schemas are the same"
	}
	where := "the schema"
	if d.Column != "" {
		where = fmt.Sprintf("column %q", d.Column)
	}
	return fmt.Sprintf("%s: field %q is %s in one schema and %s in the other", where, d.Field, d.A, d.B)
}

// Diff returns the first difference between a and b in declaration order
// (the target, then the features in order, then the schema-level fields),
// or nil when their declarations are the same (then their fingerprints are
// equal). It reads the declarations only, which are public, so a message
// built from it can name the column and field behind a fingerprint
// mismatch.
func Diff(a, b *Schema) *Difference {
	if a == nil || b == nil {
		if a == b {
			return nil
		}
		return &Difference{Field: "schema", A: present(a != nil), B: present(b != nil)}
	}
	if d := diffFields(a.Target.Name, a.Target, b.Target, "target "); d != nil {
		if a.Target.Name != b.Target.Name {
			d.Column = a.Target.Name + "/" + b.Target.Name
		}
		return d
	}
	for i := 0; i < len(a.Features) && i < len(b.Features); i++ {
		fa, fb := a.Features[i], b.Features[i]
		if fa.Name != fb.Name {
			return &Difference{Column: fmt.Sprintf("feature %d", i+1), Field: "name", A: quoteJSON(fa.Name), B: quoteJSON(fb.Name)}
		}
		if d := diffFields(fa.Name, fa, fb, ""); d != nil {
			return d
		}
	}
	if len(a.Features) != len(b.Features) {
		return &Difference{Field: "number of features", A: fmt.Sprint(len(a.Features)), B: fmt.Sprint(len(b.Features))}
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) == string(jb) {
		return nil
	}
	return diffFields("", topLevel(a), topLevel(b), "")
}

func present(ok bool) string {
	if ok {
		return "present"
	}
	return "absent"
}

func quoteJSON(s string) string { b, _ := json.Marshal(s); return string(b) }

// topLevel is a schema without its target and features.
func topLevel(s *Schema) *Schema {
	c := *s
	c.Target, c.Features = Target{}, nil
	return &c
}

// diffFields compares the JSON fields of two declarations of one column.
func diffFields(column string, a, b any, prefix string) *Difference {
	ma, mb := fieldsOf(a), fieldsOf(b)
	keys := map[string]bool{}
	for k := range ma {
		keys[k] = true
	}
	for k := range mb {
		keys[k] = true
	}
	order := make([]string, 0, len(keys))
	for k := range keys {
		order = append(order, k)
	}
	sort.Strings(order)
	for _, k := range order {
		va, vb := string(ma[k]), string(mb[k])
		if va == vb {
			continue
		}
		if va == "" {
			va = "absent"
		}
		if vb == "" {
			vb = "absent"
		}
		return &Difference{Column: column, Field: prefix + k, A: va, B: vb}
	}
	return nil
}

func fieldsOf(v any) map[string]json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}
