package schema

// DropsRecords reports whether a column's missing-value policy is "drop"
// (MissingDrop). Such records are kept as all-zero rows when fitting (see
// the package doc), so then not every encoded row carries the intercept.
// It reads only the schema.
func (s *Schema) DropsRecords() bool {
	if s.Target.Missing == MissingDrop {
		return true
	}
	for _, f := range s.Features {
		if f.Missing == MissingDrop {
			return true
		}
	}
	return false
}
