package main

import (
	"fmt"

	"github.com/dplearn/dplearn/regress"
	"github.com/spf13/cobra"
)

// addMechanismFlags defines a flag for every mechanism option of the
// registry (regress.Options: name, help and default are the registry's)
// and returns where each value lands, by flag.
func addMechanismFlags(cmd *cobra.Command) map[string]any {
	f := cmd.Flags()
	vals := map[string]any{}
	for _, op := range regress.Options() {
		switch d := op.Default.(type) {
		case float64:
			vals[op.Flag] = f.Float64(op.Flag, d, op.Help)
		case int:
			vals[op.Flag] = f.Int(op.Flag, d, op.Help)
		case string:
			vals[op.Flag] = f.String(op.Flag, d, op.Help)
		case bool:
			vals[op.Flag] = f.Bool(op.Flag, d, op.Help)
		default:
			panic(fmt.Sprintf("regress option %s has a default of type %T", op.Flag, d))
		}
	}
	return vals
}

// checkWorkersFlag refuses --workers outside [0, 65536] (the mechanism
// options' ranges are fit.Check's).
func checkWorkersFlag(cmd *cobra.Command) error {
	v, err := cmd.Flags().GetInt("workers")
	if err != nil || !cmd.Flags().Changed("workers") {
		return nil
	}
	if v < 0 || v > 1<<16 {
		return fmt.Errorf("--workers must be from 0 (all cores) to 65536, got %v", v)
	}
	return nil
}
